"""1x1 convolutions on the GPU: which kernels cuDNN runs for each, their summed time per call, in NCHW
and in channels-last, half precision and TF32; and a profile's prices of a recorded run.

    python benchmarks/conv1x1_kernels.py [--json OUT.json]
    python benchmarks/conv1x1_kernels.py --planes [--json OUT.json]
    python benchmarks/conv1x1_kernels.py --check benchmarks/results/h100_conv1x1_kernels.json [--profile P]

``--check`` (no GPU needed) prints the |error| of the profile's kernel time by group (NCHW over a
narrow plane, on cuDNN's legacy kernel or not, channels-last of stride 1 or 2), leaving out
calibration's own shapes.

Shapes are the zoo's and the held-out zoo's 1x1 convolutions at 32 images (``benchmarks/results``'
records hold their measured times inside whole models), plus neighbours that move one channel count
to a multiple of 64. The summed kernel time is what the zoo's per-op figure compares with.

``--planes``: NCHW 1x1 convolutions of stride 1 over planes larger than 16x16 whose bytes are not a
multiple of 16 (Inception's 35x35 and 17x17, SqueezeNet's 55x55 and 27x27, and others), beside planes
that are (a side of 18 or 34 is aligned in float32 and 8-byte aligned in half precision), both dtypes.
"""
import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# (in channels, plane side, out channels, stride)
SHAPES = [
    (120, 16, 720, 1), (88, 16, 528, 1), (112, 14, 672, 1), (112, 14, 336, 1), (80, 14, 480, 1), (72, 14, 432, 1),
    (80, 14, 200, 1), (24, 56, 144, 1), (24, 56, 72, 1), (72, 56, 72, 1), (256, 32, 96, 1), (256, 32, 1024, 1),
    (120, 14, 40, 1), (600, 7, 100, 1), (768, 7, 140, 1), (64, 73, 80, 1),
    (128, 14, 512, 1), (64, 14, 384, 1), (240, 14, 120, 1), (120, 14, 128, 1), (160, 14, 192, 1), (1024, 14, 256, 1),
    (64, 56, 256, 1), (256, 56, 64, 1), (160, 56, 128, 1), (1280, 8, 384, 1), (512, 28, 128, 1), (48, 56, 104, 1),
    (112, 14, 640, 1), (112, 14, 704, 1), (128, 14, 672, 1), (96, 14, 672, 1), (112, 16, 672, 1), (128, 16, 768, 1),
    (120, 16, 768, 1), (128, 16, 720, 1), (80, 14, 512, 1), (64, 14, 480, 1), (128, 14, 480, 1), (80, 28, 480, 1),
    (256, 56, 512, 2), (512, 28, 1024, 2), (1024, 14, 2048, 2), (64, 56, 256, 2),
]

# (in channels, plane side, out channels): NCHW, stride 1, 32 images, float16 and float32 (TF32 as torch's default)
PLANE_SHAPES = [
    (192, 35, 64), (192, 35, 48), (256, 35, 48), (288, 35, 64), (768, 17, 160), (768, 17, 192), (768, 17, 128),
    (64, 73, 80), (64, 55, 16), (16, 55, 64), (128, 27, 32), (32, 27, 128), (256, 19, 256), (512, 25, 128),
    (192, 36, 64), (256, 36, 48), (768, 20, 160), (768, 18, 192), (256, 34, 64), (64, 56, 16), (128, 28, 32),
    (256, 32, 1024), (128, 32, 512), (2048, 8, 192),
]


def kernels(fn, reps: int = 20) -> tuple[float, dict[str, tuple[float, float]]]:
    """The GPU work of one call of ``fn`` (after one call to warm it): its summed kernel time, and per
    kernel name (memsets included) the calls per call of ``fn`` and the mean time of one, us."""
    fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    ks = [e for e in p.events() if e.device_type.name == "CUDA"]
    t = lambda e: e.device_time if hasattr(e, "device_time") else e.cuda_time  # noqa: E731
    per = {}
    for e in ks:
        per.setdefault(e.name, []).append(t(e))
    total_us = sum(t(e) for e in ks) / reps
    return total_us, {name: (len(v) / reps, sum(v) / len(v)) for name, v in per.items()}


def check(record: Path, profile_path: Path, rows: bool = False) -> None:
    """The profile's price of each recorded convolution against its summed kernel time, by group."""
    from benchmarks.conv_channels_check import kernel_class
    from benchmarks.sweep_checks import error_line, kernel_s
    from calibrate.conv import GPU_CHANNELS_LAST_SHAPES, GPU_HALF_SHAPES, GPU_NARROW_PLANE_SHAPES, GPU_SHAPES, channel_shapes
    from roofline.model.curves import conv_narrow_plane
    from roofline.profiles import load_profile_file

    profile = load_profile_file(profile_path)
    calibrated = {(s.batch, s.in_channels, s.out_channels, s.size, s.stride, s.layout)
                  for s in GPU_SHAPES + GPU_HALF_SHAPES + GPU_CHANNELS_LAST_SHAPES + GPU_NARROW_PLANE_SHAPES + channel_shapes() if s.kernel == 1}
    errors: dict[str, list[float]] = defaultdict(list)
    for r in json.loads(record.read_text())["rows"]:
        if (32, r["cin"], r["cout"], r["side"], r["stride"], r["layout"]) in calibrated:
            continue
        dtype = getattr(torch, r["dtype"])
        with torch.device("meta"):
            x, w = torch.empty(32, r["cin"], r["side"], r["side"], dtype=dtype), torch.empty(r["cout"], r["cin"], 1, 1, dtype=dtype)
        if r["layout"] == "channels_last":
            x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
        predicted_us = 1e6 * kernel_s(lambda x, w, s=r["stride"]: F.conv2d(x, w, None, s), (x, w), profile)
        if r["layout"] == "nchw" and conv_narrow_plane("2d", 1, r["stride"] > 1, r["side"] ** 2, dtype.itemsize):
            group = "nchw narrow plane"
        elif r["layout"] == "nchw":
            group = "nchw " + ("legacy kernel" if kernel_class(r["names"]) == "legacy" else "other kernels")
        else:
            group = f"channels-last stride {r['stride']}"
        error = predicted_us / r["kernels_us"] - 1
        errors[f"{r['dtype']:8s} {group}"].append(error)
        if rows:
            print(f"  {r['dtype']:8s} {r['layout']:13s} {r['cin']:5d}->{r['cout']:5d} {r['side']:3d}^2 s{r['stride']}: predicted {predicted_us:7.1f} us  "
                  f"measured {r['kernels_us']:7.1f} us  {100 * error:+6.1f}%  [{group}]")
    print(f"{profile_path.name} on {record.name}, calibration's own shapes left out:")
    for key in sorted(errors):
        print(f"  {key:<34} {error_line(errors[key])}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--check", type=Path, help="a recorded run to price (no GPU needed)")
    ap.add_argument("--profile", type=Path, default=REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    ap.add_argument("--rows", action="store_true", help="with --check: each recorded convolution's line too")
    ap.add_argument("--planes", action="store_true", help="time PLANE_SHAPES (NCHW, stride 1, both dtypes) instead of SHAPES")
    args = ap.parse_args()
    if args.check:
        check(args.check, args.profile, rows=args.rows)
        return
    torch.backends.cudnn.benchmark = False
    rows = []
    shapes = [(cin, side, cout, 1) for cin, side, cout in PLANE_SHAPES] if args.planes else SHAPES
    for dt in (torch.float16, torch.float32):
        for cin, side, cout, stride in shapes:
            if dt == torch.float32 and not args.planes and (cin, side, cout) not in {(120, 16, 720), (112, 14, 672), (80, 14, 480), (128, 14, 512), (256, 56, 512), (64, 56, 256)}:
                continue
            for layout in ("nchw",) if args.planes else ("nchw", "channels_last"):
                x = torch.randn(32, cin, side, side, device="cuda", dtype=dt)
                w = torch.randn(cout, cin, 1, 1, device="cuda", dtype=dt)
                if layout == "channels_last":
                    x, w = x.to(memory_format=torch.channels_last), w.to(memory_format=torch.channels_last)
                total, names = kernels(lambda: F.conv2d(x, w, None, stride))
                names = {name[:90]: v for name, v in names.items()}
                rows.append(dict(dtype=str(dt).split(".")[-1], cin=cin, side=side, cout=cout, stride=stride, layout=layout, kernels_us=total, names=names))
                short = "; ".join(f"{n[:60]} x{c:.0f} {us:.1f}us" for n, (c, us) in names.items())
                print(f"{rows[-1]['dtype']:8s} {layout:13s} {cin:5d}->{cout:5d} {side:3d}^2 s{stride}: {total:7.1f} us  {short}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, cudnn=torch.backends.cudnn.version(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
