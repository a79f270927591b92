"""addmm (a bias in the GEMM's epilogue, as F.linear runs it) over mm at widths past calibration's
addmm grid (``calibrate.mechanisms.ADDMM_GRID``: n of 768 and 3072), float32 and TF32.

    python benchmarks/addmm_widths.py --measure OUT.json        # on the GPU
    python benchmarks/addmm_widths.py --show OUT.json [--profile P]   # anywhere

Rows 1-4096 x widths 768-11008 x reductions 1024 and 4096, each pair timed by the shared protocol
(``roofline.timing``). ``--show`` prints the measured ratio per shape and the ratio the profile's grid
gives it (held at the grid's edges beyond n = 3072).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

WIDTHS = (768, 3072, 4096, 6144, 8192, 11008)
ROWS = (1, 32, 128, 512, 1024, 4096)
REDUCTIONS = (1024, 4096)


def measure(path: Path) -> None:
    import torch
    import torch.nn.functional as F

    from roofline.timing import time_fn

    points = []
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for n in WIDTHS:
            for m in ROWS:
                for k in REDUCTIONS:
                    x, w, b = torch.randn(m, k, device="cuda"), torch.randn(n, k, device="cuda"), torch.randn(n, device="cuda")
                    addmm = time_fn(lambda: F.linear(x, w, b), device="cuda", budget_s=0.03).stat().median_s
                    mm = time_fn(lambda: F.linear(x, w), device="cuda", budget_s=0.03).stat().median_s
                    points.append(dict(tf32=tf32, m=m, n=n, k=k, addmm_s=addmm, mm_s=mm))
    path.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, points=points), indent=1))


def show(path: Path, profile_arg: str) -> None:
    from roofline.model.device import DeviceModel
    from roofline.pipeline import resolve_profile

    profile, _ = resolve_profile(profile_arg, "cuda")
    ratios = DeviceModel(profile.gpu, "cuda").gemm_ratios
    points = json.loads(path.read_text())["points"]
    for tf32 in (False, True):
        dtype = "tf32" if tf32 else "float32"
        for k in REDUCTIONS:
            print(f"{dtype} k {k}: measured addmm / mm (the profile's grid)")
            for n in WIDTHS:
                row = sorted((p for p in points if p["tf32"] == tf32 and p["k"] == k and p["n"] == n), key=lambda p: p["m"])
                cells = [f"m{p['m']}: {p['addmm_s'] / p['mm_s']:.2f} ({ratios.addmm_ratio(dtype, p['m'], n, k):.2f})" for p in row]
                print(f"  n {n:6d}  " + "  ".join(cells))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", type=Path)
    ap.add_argument("--show", type=Path)
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    args = ap.parse_args()
    if args.measure:
        measure(args.measure)
    if args.show:
        show(args.show, args.profile)
