"""An optimizer step inside training steps against the same step repeated alone, on the GPU.

    python benchmarks/optimizer_phase_probe.py --json OUT.json   # on the GPU machine

For torchvision models at a training batch (float32, AdamW foreach), each training step synchronizes
after its backward, then times its optimizer step: the wall time to a synchronize and the device time
between CUDA events recorded before and after it. Then the same step runs alone (no forward or
backward between steps), timed the same way. The device time between the events holds the step's
kernels and any wait for the host between them, so it bounds how much slower an optimizer phase runs
inside a step than alone without telling the two apart.
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

MODELS = [("resnet18", 32), ("vit_b_16", 32), ("convnext_tiny", 32), ("mobilenet_v2", 32)]
STEPS = 10


def timed_step(opt) -> tuple[float, float]:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    opt.step()
    end.record()
    torch.cuda.synchronize()
    return time.perf_counter() - t0, start.elapsed_time(end) / 1e3


def probe(name: str, batch: int) -> dict:
    import torchvision

    model = getattr(torchvision.models, name)().cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (batch,), device="cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=True)
    in_step = []
    for i in range(STEPS + 3):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        torch.cuda.synchronize()
        if i >= 3:
            in_step.append(timed_step(opt))
        else:
            opt.step()
    alone = [timed_step(opt) for _ in range(STEPS)]
    med = lambda rows, k: 1e6 * statistics.median(r[k] for r in rows)  # noqa: E731
    return dict(batch=batch, in_step_wall_us=med(in_step, 0), in_step_device_us=med(in_step, 1), alone_wall_us=med(alone, 0), alone_device_us=med(alone, 1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    out = {}
    for name, batch in MODELS:
        r = probe(name, batch)
        out[name] = r
        print(f"{name:<16} batch {batch}: in a step wall {r['in_step_wall_us']:8.1f} us, device {r['in_step_device_us']:8.1f} us; "
              f"alone wall {r['alone_wall_us']:8.1f} us, device {r['alone_device_us']:8.1f} us", flush=True)
        torch.cuda.empty_cache()
    Path(args.json).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=time.strftime("%Y-%m-%d"), models=out), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
