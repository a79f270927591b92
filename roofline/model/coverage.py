"""Which ops the model of time can stand behind, and why not the others.

An op is covered when a formula prices it and its kernel is of a kind the profile calibrated: a
GEMM-shaped op of a dtype with a matmul curve, a convolution, attention or recurrent stack with its
own curves, or a streaming kernel (pointwise, reduction, norm, data movement) that the bandwidth
and op-family curves describe. The rest are still priced, from their FLOPs and bytes, but the report
lists them as uncertain with the time they carry, so that an answer built on them is flagged.
"""

from __future__ import annotations

import torch

from roofline.costs import OpCost
from roofline.graph.ops import CapturedOp
from roofline.model.device import DeviceModel
from roofline.model.kernels import DTYPE_NAMES, SELECTION_FAMILY, cudnn_may_loop_groups, kernel_source

# Kernels that are neither streaming nor a GEMM, and that no calibration stage times: what runs them.
UNCALIBRATED_KERNELS = {
    "aten._fft_c2c": "an FFT (cuFFT / pocketfft): no calibrated FFT family",
    "aten._fft_r2c": "an FFT (cuFFT / pocketfft): no calibrated FFT family",
    "aten._fft_c2r": "an FFT (cuFFT / pocketfft): no calibrated FFT family",
    "aten._unique2": "unique: a sort, a scan and a host sync; no calibrated family",
    "aten._unique": "unique: a sort, a scan and a host sync; no calibrated family",
    "aten.unique_dim": "unique: a sort, a scan and a host sync; no calibrated family",
    "aten.unique_consecutive": "unique: a scan and a host sync; no calibrated family",
    "aten.nonzero": "nonzero: a scan and a host sync; no calibrated family",
    "aten.argwhere": "nonzero: a scan and a host sync; no calibrated family",
    "aten.masked_select": "masked_select: a scan and a host sync; no calibrated family",
    "aten.kthvalue": "a selection (sort-based): no calibrated family",
    "aten.median": "a selection (sort-based): no calibrated family",
    "aten.nanmedian": "a selection (sort-based): no calibrated family",
    "aten.mode": "a selection (sort-based): no calibrated family",
    "aten.searchsorted": "a binary search: no calibrated family",
    "aten.bucketize": "a binary search: no calibrated family",
    "aten.bincount": "a histogram with atomics: no calibrated family",
    "aten.histc": "a histogram with atomics: no calibrated family",
    "aten.multinomial": "sampling: no calibrated family",
    "aten.randperm": "a random permutation (a sort): no calibrated family",
}
# Selection kernels with a family of their own: uncertain only when the profile did not time it.
_SELECTION_ONLY = {"topk", "sort", "cumsum", "max_pool2d"}
_GEMM_CATEGORIES = {"matmul", "conv", "attention"}


def _dtype_name(dtype: torch.dtype | None) -> str:
    return str(dtype).replace("torch.", "") if dtype is not None else "?"


def uncertain_reason(op: CapturedOp, cost: OpCost, supported: bool, dev: DeviceModel) -> str | None:
    """Why this op's predicted time cannot be stood behind; None when the profile covers it."""
    if not supported:
        return "no cost formula: priced by its bytes only"
    if not cost.kernels:
        return None
    packet = op.packet
    if packet in UNCALIBRATED_KERNELS:
        return UNCALIBRATED_KERNELS[packet]
    family = SELECTION_FAMILY.get(packet)
    if family in _SELECTION_ONLY and not dev.has_family(family):
        return f"{packet.removeprefix('aten.')}: this profile has no calibrated {family} family (an older or quick calibration)"
    if cost.category in _GEMM_CATEGORIES:
        dtype = cost.compute_dtype or (op.tensor_inputs()[0].dtype if op.tensor_inputs() else None)
        if dtype is not None and dtype.is_complex:
            return f"{cost.category} in {_dtype_name(dtype)}: complex arithmetic priced on the float32 curve"
        if dtype is not None and dtype not in DTYPE_NAMES:
            return f"{cost.category} in {_dtype_name(dtype)}: no {_dtype_name(dtype)} curve; priced on the float32 one"
    forward_conv = cost.category == "conv" and not cost.parts and cost.conv_gradient is None
    if forward_conv and dev.kind == "cuda" and kernel_source(op, cost, dev) != "table":
        return cudnn_may_loop_groups(op)
    return None
