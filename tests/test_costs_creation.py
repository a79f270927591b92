"""Creation family: write-only; empty is free; templates are not read."""

import pytest
import torch

from tests.opcapture import priced


@pytest.mark.parametrize("packet, fn, flops", [
    ("aten.zeros", lambda: torch.zeros(4, 8), 0),
    ("aten.ones", lambda: torch.ones(4, 8), 0),
    ("aten.full", lambda: torch.full((4, 8), 3.0), 0),
    ("aten.rand", lambda: torch.rand(4, 8), 32),        # 1 per uniform draw
    ("aten.randn", lambda: torch.randn(4, 8), 128),     # 4 per normal draw
])
def test_write_only(packet, fn, flops):
    # (4, 8) fp32: write 128 bytes, read nothing, 1 kernel
    _, c = priced(packet, fn)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels, c.category) == (flops, 0, 128, 1, "creation")


def test_empty_is_free():
    _, c = priced("aten.empty", lambda: torch.empty(4, 8))
    assert (c.flops, c.bytes, c.kernels) == (0, 0, 0)


def test_like_does_not_read_template():
    _, c = priced("aten.zeros_like", torch.zeros_like, torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (0, 128)
    _, c = priced("aten.empty_like", torch.empty_like, torch.randn(4, 8))
    assert c.bytes == 0 and c.kernels == 0


def test_inplace_fill_writes_self_only():
    _, c = priced("aten.fill_", lambda t: t.fill_(1.0), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (0, 128)
    _, c = priced("aten.zero_", lambda t: t.zero_(), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (0, 128)


def test_arange():
    # arange(10) int64: 2 FLOPs per element (start + i*step) = 20; write 80 bytes
    _, c = priced("aten.arange", lambda: torch.arange(10))
    assert (c.flops, c.bytes_written) == (20, 80)


def test_bernoulli_with_tensor_p_reads_p():
    # bernoulli(p) with p (4, 8) fp32: reads p 128, writes 128, 1 FLOP per draw
    _, c = priced("aten.bernoulli", torch.bernoulli, torch.rand(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written) == (32, 128, 128)


def test_randperm_and_multinomial_on_two_elements():
    # randperm(2): 2 keys sorted, ceil(log2 2) = 1 compare each, + 1 per key: 2 * 1 + 2 = 4
    assert priced("aten.randperm", lambda: torch.randperm(2))[1].flops == 4
    # multinomial of 1-D probabilities over 2 categories, 4 draws with replacement: cumsum 2 + per draw
    # (draw 1 + binary search ceil(log2 2) = 1) = 2 + 4 * 2 = 10
    _, c = priced("aten.multinomial", lambda p: torch.multinomial(p, 4, replacement=True), torch.tensor([0.3, 0.7]))
    assert (c.flops, c.kernels) == (10, 3)


def test_fill_recorded_without_outputs_writes_its_self():
    from roofline.costs import cost_of
    from tests.opcapture import meta, op_of

    # fill_ of (4, 8) captured with no outputs: it writes its self, 128 bytes, in one kernel
    c, ok = cost_of(op_of(torch.ops.aten.fill_.Scalar, meta(4, 8), 1.0))
    assert ok and (c.bytes_written, c.kernels) == (128, 1)
    # zeros recorded with neither outputs nor tensor arguments writes nothing: no bytes, no kernel
    c, ok = cost_of(op_of(torch.ops.aten.zeros.default, [4, 8]))
    assert ok and (c.flops, c.bytes_written, c.kernels) == (0, 0, 0)
