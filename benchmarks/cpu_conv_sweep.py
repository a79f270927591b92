"""CPU convolutions, forward and each gradient, timed and priced by a profile.

    OMP_NUM_THREADS=1 python benchmarks/cpu_conv_sweep.py --measure OUT.json      # time the sweep (~1 min)
    python benchmarks/cpu_conv_sweep.py --sweep OUT.json --profile P [P2 ...]     # price it

The sweep is 24 dense 2-d NCHW float32 convolutions (channels 3..512, sizes 7..112, batch 1..32,
1x1, 3x3 and 7x7 filters, strides 1 and 2), none of them a shape of the CPU calibration
(``calibrate.conv.CPU_SHAPES``, ``CPU_PASS_SHAPES``) nor a layer of ``train_check.py``'s SmallCNN:
each timed forward, then its ``convolution_backward`` with the input's gradient alone, the
weight's alone, and both (a training step's call), in a tight loop at this process's thread count.
Pricing prints each point's predicted and measured time and the median and max |error| by pass
(a gradient asked for alone is priced as that gradient's part of ``convolution_backward``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import op_kernel_s  # noqa: E402
from roofline.graph.ops import CapturedOp, TensorMeta  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

# (batch, in channels, out channels, size, kernel, stride); padding kernel // 2
SHAPES = [
    (8, 3, 32, 64, 3, 1), (4, 3, 64, 112, 7, 2), (32, 3, 24, 32, 3, 1), (1, 3, 64, 112, 7, 2),
    (16, 16, 16, 56, 3, 1), (8, 24, 48, 56, 3, 2), (32, 32, 32, 16, 3, 1), (16, 32, 64, 32, 3, 2),
    (8, 64, 64, 28, 3, 1), (32, 64, 128, 8, 3, 1), (8, 64, 128, 28, 3, 2), (16, 128, 128, 7, 3, 1),
    (4, 128, 256, 14, 3, 2), (2, 256, 256, 7, 3, 1), (1, 96, 96, 28, 3, 1), (16, 40, 80, 28, 3, 1),
    (8, 16, 32, 112, 3, 2), (32, 8, 16, 28, 3, 1),
    (16, 64, 256, 14, 1, 1), (16, 256, 64, 14, 1, 1), (4, 128, 128, 28, 1, 1), (32, 32, 64, 16, 1, 2),
    (8, 256, 512, 7, 1, 1), (32, 48, 48, 14, 1, 1),
]
MASKS = {"input": [True, False, False], "weight": [False, True, False], "both": [True, True, False]}


def _median_s(fn, budget_s: float = 0.2) -> float:
    for _ in range(2):
        fn()
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < budget_s or len(times) < 5:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def measure() -> dict:
    points = []
    aten = torch.ops.aten
    for b, ci, co, s, k, st in SHAPES:
        x, w = torch.randn(b, ci, s, s), torch.randn(co, ci, k, k) / (ci * k * k) ** 0.5
        y = F.conv2d(x, w, None, st, k // 2)
        g = torch.randn_like(y)
        point = dict(shape=[b, ci, co, s, k, st], forward=_median_s(lambda: F.conv2d(x, w, None, st, k // 2)))
        for name, mask in MASKS.items():
            point[name] = _median_s(lambda: aten.convolution_backward(g, x, w, None, [st] * 2, [k // 2] * 2, [1, 1], False, [0, 0], 1, mask))
        print(point, flush=True)
        points.append(point)
    return dict(threads=torch.get_num_threads(), torch=torch.__version__, points=points)


def predicted_s(dev: DeviceModel, shape, variant: str) -> float:
    b, ci, co, s, k, st = shape
    out = (s + 2 * (k // 2) - k) // st + 1
    x = TensorMeta.contiguous((b, ci, s, s), torch.float32, "cpu")
    w = TensorMeta.contiguous((co, ci, k, k), torch.float32, "cpu")
    y = TensorMeta.contiguous((b, co, out, out), torch.float32, "cpu")
    conv = ([st] * 2, [k // 2] * 2, [1, 1], False, [0, 0], 1)
    if variant == "forward":
        op = CapturedOp(index=0, target=torch.ops.aten.convolution.default, args=(x, w, None, *conv), kwargs={}, outputs=(y,))
    else:
        mask = MASKS[variant]
        outs = (x if mask[0] else None, w if mask[1] else None)
        op = CapturedOp(index=0, target=torch.ops.aten.convolution_backward.default, args=(y, x, w, None, *conv, mask),
                        kwargs={}, outputs=tuple(o for o in outs if o is not None))
    return op_kernel_s(op, dev)


def report(sweep: dict, path: str) -> None:
    dev = DeviceModel(load_profile_file(Path(path)).host, "cpu")
    print(f"{Path(path).name} (sweep at {sweep['threads']} thread(s)):")
    errors: dict[str, list[float]] = {v: [] for v in ("forward", *MASKS)}
    for p in sweep["points"]:
        cells = []
        for v in errors:
            t = predicted_s(dev, p["shape"], v)
            errors[v].append(t / p[v] - 1)
            cells.append(f"{v[:4]} {t * 1e6:7.0f}/{p[v] * 1e6:7.0f} {100 * errors[v][-1]:+5.0f}%")
        print(f"  {str(tuple(p['shape'])):<26} " + "  ".join(cells))
    for v, e in errors.items():
        a = [abs(x) for x in e]
        print(f"  {v:<8} n={len(a)} |error| median {100 * statistics.median(a):5.1f}%  max {100 * max(a):5.1f}%  "
              f"signed median {100 * statistics.median(e):+6.1f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", help="time the sweep and write it here")
    ap.add_argument("--sweep", help="a recorded sweep to price")
    ap.add_argument("--profile", nargs="*", default=[])
    args = ap.parse_args()
    if args.measure:
        Path(args.measure).write_text(json.dumps(measure(), indent=1))
    sweep = json.loads(Path(args.sweep or args.measure).read_text()) if (args.sweep or args.measure) else None
    for path in args.profile:
        report(sweep, path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
