"""A convolution's backward kernels priced by a profile against the H100's, one gradient at a time.

    python benchmarks/conv_backward_check.py [--sweep benchmarks/results/h100_conv_backward.json] [--profile P ...]

The sweep (``mechanism_sweep.py --only conv_backward``) times the input's and the weight's gradient
of 80 convolutions of ``calibrate.conv``'s channel grid and 17 depthwise ones apart, beside their
forward, in float32 (TF32, cuDNN's default), float16 and bfloat16. This prices each the way a training step's
``convolution_backward`` is priced (its parts: ``roofline.costs.backward``) and prints the |error|
(median, p90) by gradient, dtype and filter, and the forward's for reference.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import error_line, op_kernel_s, sweep_points  # noqa: E402
from roofline.graph.ops import CapturedOp, TensorMeta  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
MASKS = {"input_grad": [True, False, False], "weight_grad": [False, True, False]}


def predicted_s(dev: DeviceModel, p: dict) -> float:
    """The profile's time for one sweep point: the forward convolution, or one gradient's part."""
    dt = DTYPES[p["dtype"]]
    out_size = (p["size"] + 2 * p["padding"] - p["kernel"]) // p["stride"] + 1
    x = TensorMeta.contiguous((p["batch"], p["cin"], p["size"], p["size"]), dt, "cuda")
    groups = p.get("groups", 1)
    w = TensorMeta.contiguous((p["cout"], p["cin"] // groups, p["kernel"], p["kernel"]), dt, "cuda")
    y = TensorMeta.contiguous((p["batch"], p["cout"], out_size, out_size), dt, "cuda")
    conv = ([p["stride"]] * 2, [p["padding"]] * 2, [1, 1], False, [0, 0], groups)
    if p["variant"] == "forward":
        op = CapturedOp(index=0, target=torch.ops.aten.convolution.default, args=(x, w, None, *conv), kwargs={}, outputs=(y,))
    else:
        outs = (x, None, None) if p["variant"] == "input_grad" else (None, w, None)
        op = CapturedOp(index=0, target=torch.ops.aten.convolution_backward.default, args=(y, x, w, None, *conv, MASKS[p["variant"]]),
                        kwargs={}, outputs=tuple(o for o in outs if o is not None))
    return op_kernel_s(op, dev)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", default=str(REPO / "benchmarks" / "results" / "h100_conv_backward.json"))
    ap.add_argument("--profile", nargs="+", default=[str(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")])
    args = ap.parse_args()
    points = sweep_points(args.sweep, "conv_backward")
    for path in args.profile:
        dev = DeviceModel(load_profile_file(Path(path)).gpu, "cuda")
        errors: dict[str, list[float]] = defaultdict(list)
        for p in points:
            e = predicted_s(dev, p) / p["median_s"] - 1
            errors[p["variant"]].append(e)
            kind = "depthwise" if p.get("groups", 1) > 1 else "dense"
            errors[f"{p['variant']} {kind}"].append(e)
            errors[f"{p['variant']} {kind} {p['dtype']} {p['kernel']}x{p['kernel']} s{p['stride']}"].append(e)
        print(f"{Path(path).name}:")
        for key in sorted(errors, key=lambda k: (k.count(" "), k)):
            print(f"  {key:<34} {error_line(errors[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
