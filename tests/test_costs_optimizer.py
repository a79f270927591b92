"""Optimizer steps: the foreach ops and the fused optimizers, on the ops torch really runs."""

import pytest
import torch

from roofline.costs import cost_of
from roofline.costs.optimizer import CHUNK_ELEMENTS, launches
from tests.opcapture import capture_with_grad, meta, op_of

aten = torch.ops.aten
F32 = 4


def step_ops(optimizer_cls, **flags):
    """The ops of one optimizer step (the second: its state exists) over two parameters of 12 and 5 elements."""
    params = [torch.randn(3, 4, requires_grad=True), torch.randn(5, requires_grad=True)]
    opt = optimizer_cls(params, lr=0.1, **flags)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()
    return capture_with_grad(opt.step)


def test_foreach_adamw_step_is_priced():
    ops = [o for o in step_ops(torch.optim.AdamW, foreach=True) if o.packet.startswith("aten._foreach")]
    assert ops
    for o in ops:
        c, ok = cost_of(o)
        assert ok, o.name
    lerp = next(o for o in ops if o.packet == "aten._foreach_lerp_")
    c, _ = cost_of(lerp)
    # exp_avg.lerp_(grad, 1 - beta1): 3 FLOPs per element over 17 elements; reads both lists, writes
    # exp_avg; one launch for two small tensors
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (3 * 17, 2 * 17 * F32, 17 * F32, 1)


def test_foreach_sqrt_allocates():
    xs = [meta(3, 4), meta(5)]
    c, ok = cost_of(op_of(aten._foreach_sqrt.default, xs, outputs=xs))
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.category) == (17, 17 * F32, 17 * F32, "transcendental")


@pytest.mark.parametrize("cls, per_element", [(torch.optim.AdamW, 13 + 1), (torch.optim.Adam, 13)])
def test_fused_adam(cls, per_element):
    # AdamW's default weight decay (0.01) costs 1 FLOP per element; Adam's default is 0
    ops = step_ops(cls, fused=True)
    op = next(o for o in ops if o.packet.startswith("aten._fused_adam"))
    c, ok = cost_of(op)
    assert ok and c.flops == per_element * 17 and c.kernels == 1
    # reads params, grads and both moments; writes params and both moments (the schema marks
    # grads as written too, for the grad scaler's unscale)
    assert c.bytes_read >= 4 * 17 * F32 and c.bytes_written >= 3 * 17 * F32


def test_fused_sgd_with_momentum():
    ops = step_ops(torch.optim.SGD, fused=True, momentum=0.9)
    op = next(o for o in ops if o.packet == "aten._fused_sgd_")
    c, ok = cost_of(op)
    assert ok and c.flops == (2 + 3) * 17


def test_launches_follow_multi_tensor_apply():
    assert launches([10, 20], 4) == 1
    assert launches([CHUNK_ELEMENTS * 321], 1) == 2  # 320 chunks per launch
    assert launches([1] * 111, 1) == 2  # 110 tensors per launch at depth 1
    assert launches([1] * 37, 4) == 2  # 36 at depth 4
    assert launches([CHUNK_ELEMENTS * 3] * 110, 1) == 2  # 330 chunks: a tensor cut across two launches
    assert launches([], 1) == 0
