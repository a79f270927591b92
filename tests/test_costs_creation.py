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
