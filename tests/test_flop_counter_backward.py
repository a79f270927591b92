"""Backward passes: our FLOPs equal torch.utils.flop_counter's for every op it counts, and a
backward matmul or convolution costs twice its forward.

Each case runs forward and backward twice on real CPU tensors: recorded by tests.opcapture, and
under FlopCounterMode. The grouped convolution is the documented divergence (roofline/costs/backward.py).
"""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode, flop_registry, sdpa_backward_flop_count

from roofline.costs import cost_of
from tests.opcapture import capture_with_grad

COUNTED = {k for k in flop_registry if isinstance(k, torch._ops.OpOverloadPacket)}


def train_pass(model, x):
    return lambda: model(x).sum().backward()


def flop_counter_total(fn) -> int:
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


def ours(fn) -> tuple[int, dict[str, int]]:
    """(FLOPs of the ops flop_counter counts, FLOPs of GEMM-shaped ops by forward/backward)."""
    counted, by_pass = 0, {"forward": 0, "backward": 0}
    backward = False
    for o in capture_with_grad(fn):
        backward = backward or o.packet == "aten.ones_like"  # .sum().backward() seeds the gradient first
        cost, ok = cost_of(o)
        assert ok, o.name
        if isinstance(o.target, torch._ops.OpOverload) and o.target.overloadpacket in COUNTED:
            counted += cost.flops
        if cost.category in ("matmul", "conv"):
            by_pass["backward" if backward else "forward"] += cost.flops
    return counted, by_pass


CASES = [
    ("mlp", nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)), (8, 16)),
    ("mlp_3d", nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)), (2, 5, 16)),
    ("cnn", nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2),
                          nn.Flatten(), nn.Linear(8 * 7 * 7, 10)), (2, 3, 16, 16)),
    ("conv_transpose", nn.Sequential(nn.Conv2d(3, 4, 3), nn.ConvTranspose2d(4, 3, 3, stride=2)), (1, 3, 9, 9)),
    ("conv1d", nn.Sequential(nn.Conv1d(3, 6, 5), nn.Tanh()), (2, 3, 20)),
]


@pytest.mark.parametrize("name, model, shape", CASES, ids=[c[0] for c in CASES])
def test_backward_agrees_with_flop_counter(name, model, shape):
    # the input requires grad, so every layer computes its input's gradient: backward = 2 x forward
    x = torch.randn(*shape, requires_grad=True)
    fn = train_pass(model, x)
    counted, by_pass = ours(fn)
    assert counted == flop_counter_total(fn) > 0
    assert by_pass["backward"] == 2 * by_pass["forward"] > 0


def test_grouped_conv_backward_counts_the_work():
    # flop_counter's weight-gradient term forgets the groups (2 here): ours is the work
    conv = nn.Conv2d(4, 4, 3, groups=2, bias=False)
    x = torch.randn(2, 4, 8, 8, requires_grad=True)
    fn = train_pass(conv, x)
    counted, by_pass = ours(fn)
    forward = by_pass["forward"]
    assert by_pass["backward"] == 2 * forward
    assert flop_counter_total(fn) == counted + forward  # its extra is one more weight gradient's worth


def test_attention_backward_matches_sdpa_backward_flop_count():
    # the CPU flash backward is not in flop_counter's registry: compare with its formula
    q, k, v = (torch.randn(2, 4, 32, 16, requires_grad=True) for _ in range(3))
    ops = capture_with_grad(lambda: F.scaled_dot_product_attention(q, k, v).sum().backward())
    op = next(o for o in ops if o.packet.endswith("attention_for_cpu_backward"))
    cost, _ = cost_of(op)
    assert cost.flops == sdpa_backward_flop_count(q.shape, q.shape, k.shape, v.shape)
