"""Convolutions whose channels are not a multiple of 8 (ReXNet's 185 and 1044, Res2Net's 14-56 in; an
EfficientNet's squeeze-excite 1392 -> 58 out), beside aligned neighbours, with the kernels cuDNN runs.

    python3 benchmarks/odd_width_convs.py --measure OUT.json            # on the GPU machine
    python3 benchmarks/odd_width_convs.py --show RECORD.json [--profile P]   # anywhere: kernels, and the profile's price

A half-precision pixel of such an input does not fill 16-byte vectors. The fifth held-out set's (``h100_fifth.json``)
and the held-out zoo's such convolutions took about 20-30 µs however small, priced 45-77% under; this
probe times each shape's summed kernels (the profiler's per-op figure) and names them, NCHW, 32 images.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# (in channels, out channels, plane side, filter side): odd widths, then aligned neighbours
SHAPES = [
    (702, 58, 1, 1), (87, 1044, 1, 1), (1044, 185, 7, 1), (185, 1280, 7, 1), (1392, 58, 1, 1), (116, 116, 14, 1),
    (14, 14, 56, 3), (28, 28, 28, 3), (26, 26, 56, 3), (52, 52, 28, 3), (30, 30, 28, 3),
    (704, 64, 1, 1), (88, 1048, 1, 1), (1048, 184, 7, 1), (1392, 64, 1, 1), (112, 112, 14, 1),
    (16, 16, 56, 3), (32, 32, 28, 3), (24, 24, 56, 3), (48, 48, 28, 3),
]
DTYPES = ("float16", "float32")
BATCH = 32


def measure(out: Path) -> None:
    from benchmarks.conv1x1_kernels import kernels

    points = []
    for dtype_name in DTYPES:
        dtype = getattr(torch, dtype_name)
        for cin, cout, side, k in SHAPES:
            x = torch.randn(BATCH, cin, side, side, device="cuda", dtype=dtype)
            w = torch.randn(cout, cin, k, k, device="cuda", dtype=dtype)
            total, per = kernels(lambda: torch.nn.functional.conv2d(x, w, None, 1, k // 2))
            points.append(dict(cin=cin, cout=cout, side=side, kernel=k, dtype=dtype_name, kernels_us=total, names=per))
            print(f"{dtype_name:8s} {cin:5d} -> {cout:5d} over {side:3d}, {k}x{k}: {total:7.1f} us  "
                  + ", ".join(f"{n[:60]} x{c:g} {t:.1f}" for n, (c, t) in per.items()), flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, batch=BATCH, points=points), indent=1))


def show(path: Path, profile_arg: str | None) -> None:
    from benchmarks.sweep_checks import kernel_s
    from roofline.pipeline import resolve_profile

    record = json.loads(path.read_text())
    profile = None
    if profile_arg:
        profile = resolve_profile(profile_arg, "cuda")[0]
    print(f"{record['device']}, torch {record['torch']}, {record['batch']} images, NCHW: summed kernel time" + (", price" if profile else ""))
    for p in record["points"]:
        line = f"  {p['dtype']:8s} {p['cin']:5d} -> {p['cout']:5d} over {p['side']:3d}, {p['kernel']}x{p['kernel']}: {p['kernels_us']:7.1f} us"
        if profile is not None:
            dtype = getattr(torch, p["dtype"])
            x = torch.empty(record["batch"], p["cin"], p["side"], p["side"], dtype=dtype, device="meta")
            w = torch.empty(p["cout"], p["cin"], p["kernel"], p["kernel"], dtype=dtype, device="meta")
            k = p["kernel"]
            priced = kernel_s(lambda x, w: torch.nn.functional.conv2d(x, w, None, 1, k // 2), (x, w), profile) * 1e6
            line += f"  priced {priced:7.1f} us ({100 * (priced / p['kernels_us'] - 1):+5.0f}%)"
        print(line + "  " + ", ".join(f"{n[:48]} x{c:g}" for n, (c, _) in p["names"].items()))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--measure", type=Path)
    group.add_argument("--show", type=Path)
    ap.add_argument("--profile", help="with --show: price each shape with this profile (a name or a path)")
    args = ap.parse_args(argv)
    if args.show:
        show(args.show, args.profile)
        return 0
    from benchmarks.sweep_checks import refused_without_cuda

    if refused_without_cuda("odd_width_convs.py"):
        return 2
    measure(args.measure)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
