"""Theoretical or datasheet ceilings of the machine calibration measures.

What the machine is (``roofline.machine``) comes from the OS, torch and pynvml. Peaks come from a
small datasheet table for GPUs we know, else are derived from SM count, clocks and per-architecture
throughput per clock, and the source is recorded.
"""

from __future__ import annotations

from roofline.schema.profile import CpuIdentity, GpuIdentity, Peaks

# Dense (no sparsity) datasheet figures, FLOP/s and B/s. Keyed by a substring of the device name.
GPU_DATASHEETS: dict[str, dict] = {
    "H100 80GB HBM3": dict(  # H100 SXM5
        flop_per_s={"float32": 66.9e12, "tf32": 494.7e12, "bfloat16": 989.4e12, "float16": 989.4e12},
        memory_bytes_per_s=3.35e12,
        label="NVIDIA H100 SXM5 80GB datasheet",
    ),
    "H100 PCIe": dict(
        flop_per_s={"float32": 51.2e12, "tf32": 378e12, "bfloat16": 756e12, "float16": 756e12},
        memory_bytes_per_s=2.0e12,
        label="NVIDIA H100 PCIe datasheet",
    ),
    "H200": dict(
        flop_per_s={"float32": 66.9e12, "tf32": 494.7e12, "bfloat16": 989.4e12, "float16": 989.4e12},
        memory_bytes_per_s=4.8e12,
        label="NVIDIA H200 SXM datasheet",
    ),
    "A100-SXM4-80GB": dict(
        flop_per_s={"float32": 19.5e12, "tf32": 156e12, "bfloat16": 312e12, "float16": 312e12},
        memory_bytes_per_s=2.039e12,
        label="NVIDIA A100 SXM4 80GB datasheet",
    ),
    "A100-SXM4-40GB": dict(
        flop_per_s={"float32": 19.5e12, "tf32": 156e12, "bfloat16": 312e12, "float16": 312e12},
        memory_bytes_per_s=1.555e12,
        label="NVIDIA A100 SXM4 40GB datasheet",
    ),
    "A100 80GB PCIe": dict(
        flop_per_s={"float32": 19.5e12, "tf32": 156e12, "bfloat16": 312e12, "float16": 312e12},
        memory_bytes_per_s=1.935e12,
        label="NVIDIA A100 PCIe 80GB datasheet",
    ),
    "L4": dict(
        flop_per_s={"float32": 30.3e12, "tf32": 60e12, "bfloat16": 121e12, "float16": 121e12},
        memory_bytes_per_s=0.3e12,
        label="NVIDIA L4 datasheet",
    ),
}

# FLOP per clock per SM (dense), by compute capability, for GPUs missing from the table above.
FLOP_PER_CLOCK_PER_SM: dict[tuple[int, int], dict[str, int]] = {
    (8, 0): {"float32": 128, "tf32": 1024, "bfloat16": 2048, "float16": 2048},
    (8, 6): {"float32": 256, "tf32": 512, "bfloat16": 1024, "float16": 1024},
    (8, 9): {"float32": 256, "tf32": 512, "bfloat16": 1024, "float16": 1024},
    (9, 0): {"float32": 256, "tf32": 2048, "bfloat16": 4096, "float16": 4096},
}

# Usable bytes per second per lane and direction after line encoding, by PCIe generation.
PCIE_BYTES_PER_S_PER_LANE = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}


def cpu_peaks(identity: CpuIdentity) -> Peaks:
    """Upper bounds derived from cores, clock and vector width; no datasheet is assumed."""
    if identity.max_clock_mhz is None:
        return Peaks(source="unknown: the OS reports no CPU clock")
    isa = set(identity.isa)
    if "avx512f" in isa:
        per_cycle, width = 64, "AVX-512, 2 FMA units: 2 x 16 lanes x 2"
    elif "avx2" in isa and "fma" in isa:
        per_cycle, width = 32, "AVX2, 2 FMA units: 2 x 8 lanes x 2"
    elif isa & {"neon", "asimd"}:
        per_cycle, width = 16, "NEON, 2 FMA units: 2 x 4 lanes x 2"
    else:
        per_cycle, width = 8, "scalar/SSE estimate"
    cores = identity.threads_used
    fp32 = cores * identity.max_clock_mhz * 1e6 * per_cycle
    flops = {"float32": fp32}
    source = (
        f"derived: {cores} threads x {identity.max_clock_mhz:.0f} MHz (the clock the OS reports; turbo can exceed it) "
        f"x {per_cycle} FLOP/cycle ({width})"
    )
    if "amx_bf16" in isa:
        # AMX: 1024 bf16 FLOP/cycle per core (16x32 by 32x16 tile multiply, 16 cycles).
        flops["bfloat16"] = cores * identity.max_clock_mhz * 1e6 * 1024
        source += "; bfloat16 from AMX at 1024 FLOP/cycle/core"
    elif "avx512_bf16" in isa:
        flops["bfloat16"] = 2 * fp32
        source += "; bfloat16 from AVX512_BF16 at 2x float32"
    return Peaks(flop_per_s=flops, source=source)


def gpu_peaks(identity: GpuIdentity) -> Peaks:
    link = None
    if identity.pcie_generation and identity.pcie_width:
        link = PCIE_BYTES_PER_S_PER_LANE.get(identity.pcie_generation, 0) * identity.pcie_width or None
    for key, sheet in GPU_DATASHEETS.items():
        if key in identity.name:
            return Peaks(
                flop_per_s=dict(sheet["flop_per_s"]),
                memory_bytes_per_s=sheet["memory_bytes_per_s"],
                host_link_bytes_per_s=link,
                source=f"datasheet: {sheet['label']}; PCIe from link gen x width",
            )
    flops: dict[str, float] = {}
    parts = []
    cc = tuple(int(x) for x in identity.compute_capability.split("."))
    per_clock = FLOP_PER_CLOCK_PER_SM.get(cc)  # type: ignore[arg-type]
    if per_clock and identity.sm_clock_max_mhz:
        for dtype, f in per_clock.items():
            flops[dtype] = identity.sm_count * identity.sm_clock_max_mhz * 1e6 * f
        parts.append(f"SMs x max SM clock x FLOP/clock/SM of sm_{cc[0]}{cc[1]}")
    mem = None
    if identity.memory_clock_max_mhz and identity.memory_bus_width_bits:
        mem = identity.memory_clock_max_mhz * 1e6 * 2 * identity.memory_bus_width_bits / 8
        parts.append("memory clock x 2 (DDR) x bus width")
    return Peaks(
        flop_per_s=flops,
        memory_bytes_per_s=mem,
        host_link_bytes_per_s=link,
        source="derived: " + ("; ".join(parts) if parts else "nothing derivable"),
    )
