"""3-d convolutions priced by a profile against the H100's, the grid and the video models' layers apart.

    python benchmarks/conv3d_check.py [--sweep benchmarks/results/h100_conv3d.json] [--profile P] [--points]

The sweep (``mechanism_sweep.py --only conv3d``) times the grid calibration picks its 3-d points from
(``calibrate.conv``: 8 filters, 3x3x3, 1x3x3, 3x1x1 and 1x1x1 at strides 1 and 2, at 64 and 256
channels over three clips, and two 3-channel stems; ``GPU_3D_SHAPES`` takes two of the clips), four
filters at 32-384 channels over other clips ("offgrid"), and the layers of torchvision's video
models (R3D-18, MC3-18, R(2+1)D-18, S3D, the Swin3D and MViT patch embeddings), at one clip and eight,
in float32 (TF32, cuDNN's default), float16 and bfloat16. This prices each as ``roofline advise``
prices a convolution and prints the |error| (median, p90) by part, dtype and filter; ``--points``
each point's line too; ``--without-3d`` prices them on the profile's other points. The off-grid
convolutions and the layers are held out of calibration.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, error_line, op_kernel_s, sweep_points  # noqa: E402
from roofline.graph.ops import CapturedOp, TensorMeta  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402


def out_shape(p: dict) -> tuple[int, ...]:
    sides = [p["depth"], p["size"], p["size"]]
    return (p["batch"], p["cout"], *[(s + 2 * pad - k) // st + 1 for s, k, st, pad in zip(sides, p["kernel"], p["stride"], p["padding"])])


def predicted_s(dev: DeviceModel, p: dict) -> float:
    """The profile's kernel time for one sweep point: ``aten.convolution`` on NCDHW tensors, no bias."""
    dt = DTYPES[p["dtype"]]
    x = TensorMeta.contiguous((p["batch"], p["cin"], p["depth"], p["size"], p["size"]), dt, "cuda")
    w = TensorMeta.contiguous((p["cout"], p["cin"], *p["kernel"]), dt, "cuda")
    y = TensorMeta.contiguous(out_shape(p), dt, "cuda")
    op = CapturedOp(index=0, target=torch.ops.aten.convolution.default,
                    args=(x, w, None, p["stride"], p["padding"], [1, 1, 1], False, [0, 0, 0], 1), kwargs={}, outputs=(y,))
    return op_kernel_s(op, dev)


def filter_name(p: dict) -> str:
    k, s = p["kernel"], p["stride"]
    return f"{'x'.join(map(str, k))} s{'x'.join(map(str, s)) if len(set(s)) > 1 else s[0]}"


def main() -> int:
    ap = check_parser(__doc__, "h100_conv3d.json")
    ap.add_argument("--points", action="store_true", help="each point's line")
    ap.add_argument("--without-3d", action="store_true", help="price on the profile's other points, as a profile without 3-d points")
    args = ap.parse_args()
    profile = load_profile_file(Path(args.profile))
    if args.without_3d:
        for curve in profile.gpu.measurements.conv:
            curve.points = [q for q in curve.points if q.dims != 3]
    dev = DeviceModel(profile.part("cuda"), "cuda")
    groups: dict[str, list[float]] = defaultdict(list)
    for p in sweep_points(args.sweep, "conv3d"):
        t = predicted_s(dev, p)
        e = t / p["median_s"] - 1
        for key in (p["role"], f"{p['role']} {p['dtype']}", f"{p['role']} {filter_name(p)}"):
            groups[key].append(e)
        if args.points:
            print(f"  {p['label']:<24} {p['dtype']:<8} {p['batch']}x{p['cin']}x{p['depth']}x{p['size']}^2 -> {p['cout']:<5} {filter_name(p):<12}"
                  f" predicted {t * 1e6:9.1f} us  measured {p['median_s'] * 1e6:9.1f} us  {100 * e:+7.1f}%")
    print(f"{Path(args.profile).name}{' without its 3-d points' if args.without_3d else ''}:")
    for key in sorted(groups, key=lambda k: (k.split()[0], len(k), k)):
        print(f"  {key:<24} {error_line(groups[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
