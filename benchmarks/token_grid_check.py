"""Convolutions of vision transformers and hybrids against their price: 3-channel patch embeddings
over an NCHW image, and dense and depthwise convolutions over a grid of tokens, which a reshape of
(batch, tokens, channels) hands the convolution channels-last.

    python benchmarks/token_grid_check.py [--sweep benchmarks/results/h100_token_grid.json] [--profile P] [--rows] [--drop STAGE ...]

The sweep (``mechanism_sweep.py --only token_grid`` on the GPU) times each in both layouts (patch
embeddings NCHW only), batch 1 and 32, float32 (TF32), float16 and bfloat16, with the kernels each
call ran. Prints |error| by family, layout and dtype (``--rows``: every point, with its main kernel;
``--drop conv_patches``: the profile without its patch-embedding points, as ``accuracy.py --zoo --drop``).
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, error_line, kernel_s, sweep_points  # noqa: E402
from roofline.pipeline import resolve_profile  # noqa: E402

FAMILIES = ("patch_embed", "grid_dense", "grid_depthwise")


def inputs(p: dict) -> tuple:
    """Meta tensors of a point: input (channels-last where the point was), weight, bias."""
    dt = DTYPES[p["dtype"]]
    x = torch.empty(p["batch"], p["cin"], p["size"], p["size"], dtype=dt, device="meta")
    if p["layout"] == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last)
    w = torch.empty(p["cout"], p["cin"] // p["groups"], p["kernel"], p["kernel"], dtype=dt, device="meta")
    return x, w, torch.empty(p["cout"], dtype=dt, device="meta")


def priced_s(p: dict, profile) -> float:
    stride, padding, groups = p["stride"], p["padding"], p["groups"]
    return kernel_s(lambda x, w, b: F.conv2d(x, w, b, stride, padding, 1, groups), inputs(p), profile)


def main_kernel(p: dict) -> str:
    """The point's convolution kernel, shortened, with how many times the call launched it."""
    names = [k for k in p["kernels"] if "elementwise" not in k and "Memset" not in k and "Nhwc" not in k and "Nchw" not in k and "convertTensor" not in k]
    if not names:
        return "-"
    short = names[0].replace("void ", "").replace("cudnn::engines_precompiled::", "").replace("cudnn::cnn::", "")[:44]
    return f"{short} x{names.count(names[0])}" if names.count(names[0]) > 1 else short


def main() -> int:
    ap = check_parser(__doc__, "h100_token_grid.json")
    ap.add_argument("--rows", action="store_true", help="every point's line")
    ap.add_argument("--drop", nargs="+", default=[], metavar="STAGE", help="price without these calibration stages (benchmarks.zoo.run.without_stages)")
    args = ap.parse_args()
    profile = resolve_profile(args.profile, "cuda")[0]
    if args.drop:
        from benchmarks.zoo.run import without_stages

        profile = without_stages(profile, "cuda", args.drop)
    groups: dict[tuple, list[float]] = defaultdict(list)
    for family in FAMILIES:
        for p in sweep_points(args.sweep, family):
            t = priced_s(p, profile)
            e = t / p["median_s"] - 1
            extra = f" x{p['multiplier']}" if p["multiplier"] > 1 else ""
            groups[(family, p["layout"], p["dtype"])].append(e)
            if args.rows:
                print(f"  {family:14s} {p['layout']:13s} {p['dtype']:8s} b{p['batch']:<2d} {p['cin']:4d}->{p['cout']:<4d} {p['size']:3d}px "
                      f"k{p['kernel']} s{p['stride']}{extra}: predicted {t * 1e6:8.1f} us  measured {p['median_s'] * 1e6:8.1f} us  {100 * e:+7.1f}%  {main_kernel(p)}")
    for key, errors in groups.items():
        print(f"{' '.join(key):40s} {error_line(errors)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
