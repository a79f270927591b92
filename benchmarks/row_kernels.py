"""GPU row-wise kernels (layer norm, softmax, reductions) over row length, timed and priced by a
profile: where short rows take their time per row, not per byte.

    python benchmarks/row_kernels.py --op layer_norm|layer_norm_backward|softmax|softmax_backward|sum|norm|column_sum --measure OUT.json [--kernels]  # on the GPU
    python benchmarks/row_kernels.py --sweep OUT.json --profile P                            # anywhere

Rows of 16-1024 elements (SegFormer's 32, EdgeNeXt's 48, Swin's 49, CLIP's 77, CaiT's 196, BERT's
768) at 2^20 and 2^24 elements in all, float32, float16 and bfloat16: ``F.layer_norm`` with the
affine weight and bias of nn.LayerNorm, ``torch.softmax`` over the last dimension, or their backwards
(``aten.native_layer_norm_backward`` with every gradient, ``aten._softmax_backward_data``), or a
reduction of each row to one value (``x.sum(-1)``, ``torch.linalg.vector_norm(x, dim=-1)`` as
``F.normalize`` runs it: rows of 8-4096), or a reduction over the rows that keeps each column
(``x.sum(0)``, a bias's gradient: 16-3072 columns); each timed by
the shared protocol (``roofline.timing``) and priced as ``roofline advise`` prices it. A record's
points name their op.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import DTYPES, kernel_s, timed_check_main  # noqa: E402

ROWS = {"layer_norm": [16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 768, 1024],
        "softmax": [16, 32, 49, 64, 77, 96, 128, 196, 256, 384, 512, 768, 1024]}
ROWS["softmax_backward"], ROWS["layer_norm_backward"] = ROWS["softmax"], ROWS["layer_norm"]
ROWS["sum"] = ROWS["norm"] = [8, 16, 32, 48, 64, 96, 128, 196, 256, 512, 1024, 4096]
ROWS["column_sum"] = [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 3072]  # columns kept
ELEMENTS = [1 << 20, 1 << 24]


def layer_norm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b)


def softmax(x):
    return torch.softmax(x, -1)


def softmax_backward(grad, out):
    return torch.ops.aten._softmax_backward_data(grad, out, -1, grad.dtype)


def layer_norm_backward(grad, x, w, b, mean, rstd):
    return torch.ops.aten.native_layer_norm_backward(grad, x, x.shape[-1:], mean, rstd, w, b, [True, True, True])


def row_sum(x):
    return x.sum(-1)


def row_norm(x):
    return torch.linalg.vector_norm(x, dim=-1)


def column_sum(x):
    return x.sum(0)


def _operands(p: dict, device: str):
    dt = DTYPES[p["dtype"]]
    x = torch.randn(p["rows"], p["row"], device=device, dtype=dt)
    if p["op"] in ("softmax", "sum", "norm", "column_sum"):
        return (x,)
    if p["op"] == "softmax_backward":
        return x, torch.softmax(x, -1)
    if p["op"] == "layer_norm_backward":
        stats = torch.randn(p["rows"], 1, device=device, dtype=torch.float32)
        return (torch.randn_like(x), x, torch.randn(p["row"], device=device, dtype=dt), torch.randn(p["row"], device=device, dtype=dt),
                stats, stats.abs())
    return x, torch.randn(p["row"], device=device, dtype=dt), torch.randn(p["row"], device=device, dtype=dt)


OPS = {"layer_norm": layer_norm, "layer_norm_backward": layer_norm_backward, "softmax": softmax, "softmax_backward": softmax_backward,
       "sum": row_sum, "norm": row_norm, "column_sum": column_sum}


def _timed_call(p: dict):
    operands = _operands(p, "cuda")
    return lambda: OPS[p["op"]](*operands)


def predicted_s(profile, p: dict) -> float:
    with torch.device("meta"):
        operands = _operands(p, "meta")
    return kernel_s(OPS[p["op"]], operands, profile)


def _label(p: dict) -> str:
    return f"{p['op']:<19} {p['dtype']:<8} {p['rows']:8d} rows of {p['row']:5d}"


def _args(ap) -> None:
    ap.add_argument("--op", choices=sorted(OPS), default="layer_norm", help="with --measure: the op to time")
    ap.add_argument("--kernels", action="store_true", help="with --measure: record the kernels each point ran")


def _points(args) -> list[dict]:
    return [dict(op=args.op, dtype=d, row=r, rows=n // r) for d in DTYPES for n in ELEMENTS for r in ROWS[args.op]]


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "row_kernels", _points, _timed_call, predicted_s, _label, add_args=_args))
