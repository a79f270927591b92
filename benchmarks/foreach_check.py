"""Multi-tensor (foreach) ops priced by a profile against the H100's, as torch's default AdamW runs them.

    python benchmarks/foreach_check.py [--sweep benchmarks/results/h100_foreach.json] [--profile P] [--points]

The sweep (``mechanism_sweep.py --only foreach``) times six ``torch._foreach_*`` ops (mul_, add_,
lerp_, addcmul_, sqrt, addcdiv_: the steps of a foreach AdamW) over the parameter lists of four
torchvision models and of equal tensors, float32, with the kernels each ran. This prices each as
``roofline advise --train`` prices an optimizer step's ops and prints the |error| (median, p90) in
all, on the lists whose tensor sizes calibration does not time ("held out"), by op and by list.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.mechanism_sweep import FOREACH_OPS  # noqa: E402
from benchmarks.sweep_checks import check_parser, error_line, kernel_s, sweep_points  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402


def predicted_s(profile, p: dict) -> float:
    """The profile's kernel time of one point's call, captured on meta tensors."""
    n = len(p["shapes"])
    call = FOREACH_OPS[p["op"]]

    def step(*ts):
        out = call(list(ts[:n]), list(ts[n:2 * n]), list(ts[2 * n:]))
        return out[0] if out else ts[0]

    inputs = tuple(torch.empty(s) for _ in range(3) for s in p["shapes"])  # three distinct lists
    return kernel_s(step, inputs, profile)


def held_out(p: dict) -> bool:
    """Not a list of the tensor sizes calibration's foreach stage times (``calibrate.mechanisms``:
    its tiny tensors, its large ones)."""
    from calibrate.mechanisms import FOREACH_LARGE, FOREACH_TINY

    sizes = {tuple(s) for s in p["shapes"]}
    return sizes not in ({(FOREACH_TINY[1],)}, {(FOREACH_LARGE[1],)})


def main() -> int:
    ap = check_parser(__doc__, "h100_foreach.json")
    ap.add_argument("--points", action="store_true", help="each point's line")
    args = ap.parse_args()
    profile = load_profile_file(Path(args.profile))
    groups: dict[str, list[float]] = defaultdict(list)
    for p in sweep_points(args.sweep, "foreach"):
        t = predicted_s(profile, p)
        e = t / p["median_s"] - 1
        for key in ("all", f"op {p['op']}", f"list {p['label']}") + (("held out",) if held_out(p) else ()):
            groups[key].append(e)
        if args.points:
            print(f"  {p['op']:<9} {p['label']:<18} {len(p['shapes']):4d} tensors {p['elements'] / 1e6:7.2f} M  {len(p['kernels'])} kernels"
                  f"  predicted {t * 1e6:8.1f} us  measured {p['median_s'] * 1e6:8.1f} us  {100 * e:+6.1f}%")
    print(f"{Path(args.profile).name}:")
    for key in sorted(groups, key=lambda k: (k not in ("all", "held out"), k)):
        print(f"  {key:<24} {error_line(groups[key])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
