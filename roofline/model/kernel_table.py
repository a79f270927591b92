"""The shape-exact kernel table: an op's own timed kernel, found by its exact signature.

Curves interpolate between calibrated shapes; a kernel that cuBLAS or cuDNN runs differently at one
shape (a tile that does not divide, a heuristic's choice) is off the curve. ``roofline calibrate
--for MODEL.py`` times each distinct op of a model once (``calibrate.kernels.time_op``) and stores it
under ``kernel_key``; prediction uses a stored kernel before any curve and says so per op.
"""

from __future__ import annotations

from typing import Any

import torch

from roofline.graph.ops import CapturedOp, TensorMeta


def _arg(x: Any) -> str:
    if isinstance(x, TensorMeta):
        dtype = str(x.dtype).removeprefix("torch.")
        return f"{dtype}{list(x.shape)}/{list(x.stride)}" + (f"+{x.storage_offset}" if x.storage_offset else "")
    if isinstance(x, (list, tuple)):
        inner = ",".join(_arg(v) for v in x)
        return f"[{inner}]" if isinstance(x, list) else f"({inner})"
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}={_arg(v)}" for k, v in x.items()) + "}"
    if isinstance(x, torch.device):
        return "device"  # the table belongs to one device already
    if isinstance(x, float):
        return repr(round(x, 6))
    return repr(x)


def kernel_key(op: CapturedOp) -> str:
    """The op's name and every argument (tensors by dtype, shape and stride; the rest by value)."""
    kwargs = {k: v for k, v in op.kwargs.items() if k not in ("device", "pin_memory")}
    return f"{op.name}({_arg(op.args)};{_arg(kwargs)})"
