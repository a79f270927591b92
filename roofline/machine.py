"""What this machine is: its CPU and GPU, read from the OS, torch and pynvml (NVML).

Calibration records it in a profile; ``--measure`` compares it with a profile's to refuse a profile
of another machine. Every field that cannot be read stays None rather than guessed.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from roofline.schema.profile import CpuIdentity, GpuIdentity


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def cpu_identity(threads_used: int) -> CpuIdentity:
    cpuinfo = _read("/proc/cpuinfo") or ""
    model = None
    m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    if m:
        model = m.group(1).strip()
    model = model or platform.processor() or platform.machine() or "unknown CPU"
    try:
        logical = len(os.sched_getaffinity(0))
    except AttributeError:
        logical = os.cpu_count() or 1
    cores = {
        (p, c)
        for p, c in re.findall(r"physical id\s*:\s*(\d+).*?core id\s*:\s*(\d+)", cpuinfo, re.S)
    }
    physical = min(len(cores), logical) if cores else None
    flags_m = re.search(r"^flags\s*:\s*(.+)$", cpuinfo, re.M)
    flags = set(flags_m.group(1).split()) if flags_m else set()
    isa = sorted(f for f in flags if f in {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile", "neon", "asimd", "sve"})
    max_mhz = None
    raw = _read("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
    if raw and raw.strip().isdigit():
        max_mhz = int(raw.strip()) / 1000.0
    elif (m := re.search(r"^cpu MHz\s*:\s*([\d.]+)$", cpuinfo, re.M)):
        max_mhz = float(m.group(1))
    l3 = None
    for idx in range(8):
        level = _read(f"/sys/devices/system/cpu/cpu0/cache/index{idx}/level")
        size = _read(f"/sys/devices/system/cpu/cpu0/cache/index{idx}/size")
        if level and size and level.strip() == "3":
            s = size.strip().upper()
            mult = 1024 * 1024 if s.endswith("M") else 1024 if s.endswith("K") else 1
            l3 = int(re.sub(r"[^0-9]", "", s)) * mult
    mem = None
    meminfo = _read("/proc/meminfo")
    if meminfo and (m := re.search(r"MemTotal:\s*(\d+) kB", meminfo)):
        mem = int(m.group(1)) * 1024
    return CpuIdentity(
        model=model,
        architecture=platform.machine() or "unknown",
        physical_cores=physical,
        logical_cpus=logical,
        threads_used=threads_used,
        max_clock_mhz=max_mhz,
        isa=isa,
        l3_cache_bytes=l3,
        memory_bytes=mem,
    )


def _nvml_handle(index: int):
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:
        return None, None


def gpu_identity(index: int) -> GpuIdentity:
    import torch

    props = torch.cuda.get_device_properties(index)
    fields = dict(
        name=props.name,
        index=index,
        compute_capability=f"{props.major}.{props.minor}",
        sm_count=props.multi_processor_count,
        memory_bytes=props.total_memory,
        l2_cache_bytes=getattr(props, "L2_cache_size", None) or None,
        cuda_version=torch.version.cuda,
    )
    nvml, handle = _nvml_handle(index)
    if handle is not None:

        def safe(fn, *args):
            try:
                return fn(handle, *args)
            except Exception:
                return None

        drv = None
        try:
            drv = nvml.nvmlSystemGetDriverVersion()
            drv = drv.decode() if isinstance(drv, bytes) else drv
        except Exception:
            pass
        fields.update(
            driver_version=drv,
            sm_clock_max_mhz=safe(nvml.nvmlDeviceGetMaxClockInfo, nvml.NVML_CLOCK_SM),
            memory_clock_max_mhz=safe(nvml.nvmlDeviceGetMaxClockInfo, nvml.NVML_CLOCK_MEM),
            memory_bus_width_bits=safe(nvml.nvmlDeviceGetMemoryBusWidth),
            pcie_generation=safe(nvml.nvmlDeviceGetMaxPcieLinkGeneration),
            pcie_width=safe(nvml.nvmlDeviceGetMaxPcieLinkWidth),
        )
        power = safe(nvml.nvmlDeviceGetEnforcedPowerLimit)
        fields["power_limit_w"] = power / 1000.0 if power else None
    fields = {k: (v if v not in (0, "") else None) for k, v in fields.items()}
    fields["index"] = index
    return GpuIdentity(**fields)
