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

from benchmarks.sweep_checks import check_parser, error_line, op_kernel_s, sweep_points  # noqa: E402
from roofline.graph.ops import CapturedOp, TensorMeta  # noqa: E402
from roofline.model.device import DeviceModel  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402


aten = torch.ops.aten
# each sweep op as the aten overload it dispatches to: (overload, lists it takes, scalar arguments, returns a list)
ATEN_OPS = {
    "mul_": (aten._foreach_mul_.Scalar, 1, (0.999,), False),
    "add_": (aten._foreach_add_.List, 2, (), False),
    "lerp_": (aten._foreach_lerp_.Scalar, 2, (0.1,), False),
    "addcmul_": (aten._foreach_addcmul_.Scalar, 3, (0.001,), False),  # the sweep's v + g * g: its last two lists one
    "sqrt": (aten._foreach_sqrt.default, 1, (), True),
    "addcdiv_": (aten._foreach_addcdiv_.Scalar, 3, (-0.001,), False),
}


def predicted_s(dev: DeviceModel, p: dict) -> float:
    """The device model's kernel time for one point: the aten op on lists of its shapes (float32, on
    the GPU), priced as ``roofline advise`` prices the op."""
    target, lists, scalars, returns = ATEN_OPS[p["op"]]
    names = ["p", "g", "g" if p["op"] == "addcmul_" else "v"][:lists]
    args = tuple([TensorMeta.contiguous(tuple(shape), torch.float32, "cuda") for shape in p["shapes"]] for _ in names)
    sources = tuple((f"{name}{i}", -1) for name in names for i in range(len(p["shapes"])))  # a list passed twice is read once
    outputs = tuple(TensorMeta.contiguous(tuple(shape), torch.float32, "cuda") for shape in p["shapes"]) if returns else ()
    op = CapturedOp(index=0, target=target, args=(*args, *scalars), kwargs={}, outputs=outputs, input_sources=sources)
    return op_kernel_s(op, dev)


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
    dev = DeviceModel(load_profile_file(Path(args.profile)).gpu, "cuda")
    groups: dict[str, list[float]] = defaultdict(list)
    for p in sweep_points(args.sweep, "foreach"):
        t = predicted_s(dev, p)
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
