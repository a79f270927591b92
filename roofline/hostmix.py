"""The representative op mix: small ops whose host dispatch cost stands for each kind of op.

Calibration times each op repeated alone (its dispatch cost) and all of them called in turn (their
interleaving factor); ``--measure`` times one pass of the same mix beside the model as its host-speed
index; prediction reads the mix's calibrated time back from a profile. One definition serves all three.
"""

from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

VIEWS_PER_VIEW_CALL = 2  # the representative view call makes two views; its cost is stored per view


def representative_ops(device: str) -> dict[str, Callable[[], object]]:
    """Small ops whose host dispatch cost stands for each op category in prediction
    (``roofline.model.timeline.dispatch_kind`` maps every op to one of these names)."""
    x = torch.rand(8, 8, device=device)
    y = torch.rand(8, 8, device=device)
    w = torch.rand(8, 8, device=device)
    b = torch.rand(8, device=device)
    x4 = torch.rand(1, 8, 8, 8, device=device)
    wc = torch.rand(8, 8, 3, 3, device=device)
    mean, var = torch.zeros(8, device=device), torch.ones(8, device=device)
    q = torch.rand(1, 2, 8, 8, device=device)
    # as modules call them: nn.BatchNorm2d and nn.LayerNorm pass their weight and bias (on a GPU a
    # batch norm without them takes another path than cuDNN's), nn.GroupNorm likewise
    return {
        "add": lambda: torch.add(x, y),
        "mul_scalar": lambda: x * 0.5,  # a Python number is wrapped into a tensor on every call
        "relu": lambda: torch.relu(x),
        "view": lambda: x.view(2, 4, 8).transpose(1, 2),
        "conv2d": lambda: F.conv2d(x4, wc, padding=1),
        "batch_norm": lambda: F.batch_norm(x4, mean, var, b, b),
        "group_norm": lambda: F.group_norm(x4, 2, b, b),
        "addmm": lambda: F.linear(x, w, b),
        "sum": lambda: torch.sum(x, dim=1),
        "softmax": lambda: torch.softmax(x, dim=-1),
        "layer_norm": lambda: F.layer_norm(x, (8,), b, b),
        "sdpa": lambda: F.scaled_dot_product_attention(q, q, q),
        "cat": lambda: torch.cat([x, y]),
    }


def mix_of(ops: dict[str, Callable[[], object]]) -> Callable[[], None]:
    """One pass of the mix: every representative op called once in turn."""
    calls = list(ops.values())

    def mix():
        for fn in calls:
            fn()

    return mix


def mix_alone_sum_s(dispatch_s_by_op: dict[str, float]) -> float:
    """The mix's ops, each priced at its time repeated alone: the sum of their dispatch costs (the
    view call's two views counted as two)."""
    return sum(s * (VIEWS_PER_VIEW_CALL if name == "view" else 1) for name, s in dispatch_s_by_op.items())
