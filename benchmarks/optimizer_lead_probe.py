"""Where an optimizer step's host time goes before its first kernel, on the GPU.

    python benchmarks/optimizer_lead_probe.py --json OUT.json   # on the GPU machine

torch's foreach AdamW groups its tensors by device and dtype and does other Python work before it
launches its first kernel; until then the device waits. For the parameter lists of torchvision
models (real sizes) and as many tiny tensors, it profiles steps (torch.profiler, CPU and CUDA
activity; the profiler slows every host call, so its host times run above the wall times) and records, per step, the host time from the step's start to its first kernel launch
and to its end, and the device's busy time; and each step's wall time to a synchronize without the
profiler.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

MODELS = ["resnet18", "mobilenet_v2", "convnext_tiny", "vit_b_16"]
STEPS = 8


def param_shapes(name: str) -> list[tuple[int, ...]]:
    import torchvision

    with torch.device("meta"):
        model = getattr(torchvision.models, name)()
    return [tuple(p.shape) for p in model.parameters()]


def profile_steps(shapes: list[tuple[int, ...]]) -> dict:
    from torch.profiler import ProfilerActivity, profile

    params = [torch.nn.Parameter(torch.rand(s, device="cuda")) for s in shapes]
    for p in params:
        p.grad = torch.rand_like(p)
    opt = torch.optim.AdamW(params, lr=1e-3, foreach=True)
    for _ in range(3):
        opt.step()
    torch.cuda.synchronize()
    walls = []
    for _ in range(20):  # without the profiler: the step's wall time to its synchronize
        t0 = time.perf_counter()
        opt.step()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(STEPS):
            opt.step()
            torch.cuda.synchronize()
    events = prof.events()
    steps = sorted((e for e in events if e.name.startswith("Optimizer.step#") and e.device_type.name == "CPU"), key=lambda e: e.time_range.start)
    launches = sorted(e.time_range.start for e in events if e.name in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernelEx"))
    kernels = [e for e in events if e.device_type.name == "CUDA"]
    rows = []
    for n, s in enumerate(steps):
        start, end = s.time_range.start, s.time_range.end
        first = next((t for t in launches if start <= t <= end), None)
        until = steps[n + 1].time_range.start if n + 1 < len(steps) else float("inf")  # the step's kernels: before the next step
        busy = sum(k.time_range.end - k.time_range.start for k in kernels if start <= k.time_range.start < until)
        rows.append(dict(host_us=end - start, lead_us=(first - start) if first is not None else None, device_us=busy))
    return dict(tensors=len(shapes), elements=sum(int(torch.Size(s).numel()) for s in shapes), wall_us=1e6 * statistics.median(walls),
                host_us=statistics.median(r["host_us"] for r in rows), lead_us=statistics.median(r["lead_us"] for r in rows if r["lead_us"] is not None),
                device_us=statistics.median(r["device_us"] for r in rows), steps=rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    out = {}
    for name in MODELS:
        shapes = param_shapes(name)
        for label, s in ((name, shapes), (f"{name} tiny", [(1,)] * len(shapes))):
            r = profile_steps(s)
            out[label] = r
            print(f"{label:<22} {r['tensors']:4d} tensors: wall {r['wall_us']:8.1f} us; profiled: host {r['host_us']:8.1f} us, first kernel after "
                  f"{r['lead_us']:8.1f} us, device busy {r['device_us']:8.1f} us", flush=True)
    Path(args.json).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=time.strftime("%Y-%m-%d"), cases=out), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
