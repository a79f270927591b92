"""Shape family: views are free; cat/stack/pad/repeat/flip move bytes."""

import pytest
import torch
import torch.nn.functional as F

from roofline.costs import cost_of
from tests.opcapture import capture_ops, meta, op_of, priced

aten = torch.ops.aten


@pytest.mark.parametrize("fn", [
    lambda t: t.view(8, 4), lambda t: t.t(), lambda t: t.transpose(0, 1), lambda t: t.permute(1, 0),
    lambda t: t.unsqueeze(0), lambda t: t[None, 1:3, ::2], lambda t: t[0], lambda t: t.split(2),
    lambda t: t.chunk(2, 1), lambda t: t.unbind(0), lambda t: t.narrow(1, 0, 2), lambda t: t.expand(3, 4, 8),
    lambda t: t.flatten(), lambda t: t.unflatten(1, (2, 4)), lambda t: t.detach(), lambda t: t.diagonal(),
    lambda t: t.as_strided((2, 2), (1, 1)), lambda t: t.squeeze_(),
])
def test_views_are_free(fn):
    ops = capture_ops(fn, torch.randn(4, 8))
    assert ops
    for o in ops:
        c, ok = cost_of(o)
        assert ok and (c.flops, c.bytes, c.kernels, c.category) == (0, 0, 0, "view"), o.name


def test_reshape_of_noncontiguous_copies():
    # transpose then reshape: clone (read 128, write 128) + _unsafe_view (free)
    ops = capture_ops(lambda t: t.t().reshape(-1), torch.randn(4, 8))
    costs = {o.packet: cost_of(o)[0] for o in ops}
    assert (costs["aten.clone"].bytes_read, costs["aten.clone"].bytes_written) == (128, 128)
    assert costs["aten._unsafe_view"].bytes == 0


def test_reshape_whole_op_view_rule():
    # kept whole: contiguous (4, 8) -> (32,) is a view; its transpose (8, 4) stride (1, 8) is not
    op = op_of(aten.reshape.default, meta(4, 8), [32], outputs=[meta(32)])
    assert cost_of(op)[0].category == "view"
    t = meta(8, 4)
    t = type(t)(shape=(8, 4), dtype=torch.float32, stride=(1, 8))
    c = cost_of(op_of(aten.reshape.default, t, [32], outputs=[meta(32)]))[0]
    assert (c.bytes_read, c.bytes_written, c.kernels) == (128, 128, 1)


def test_cat_and_stack():
    # cat of (4, 8) and (2, 8): read 128 + 64 = 192, write 192, 1 kernel, 0 FLOPs
    _, c = priced("aten.cat", torch.cat, [torch.randn(4, 8), torch.randn(2, 8)])
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (0, 192, 192, 1)
    _, c = priced("aten.stack", torch.stack, [torch.randn(4, 8), torch.randn(4, 8)])
    assert (c.bytes_read, c.bytes_written) == (256, 256)


def test_pad_repeat_flip_roll_tril():
    # constant_pad_nd (4,8) -> (4,10): read 128, write 160, fill + copy = 2 kernels
    _, c = priced("aten.constant_pad_nd", lambda t: F.pad(t, (1, 1)), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written, c.kernels) == (128, 160, 2)
    # repeat (4, 8) x (2, 1): read 128 once, write 256
    _, c = priced("aten.repeat", lambda t: t.repeat(2, 1), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (128, 256)
    for packet, fn in [("aten.flip", lambda t: t.flip(0)), ("aten.roll", lambda t: t.roll(1, 0)),
                       ("aten.tril", torch.tril)]:
        _, c = priced(packet, fn, torch.randn(4, 8))
        assert (c.flops, c.bytes_read, c.bytes_written) == (0, 128, 128)


def test_view_copy_reads_only_kept_elements():
    # select_copy of row 0 of (4, 8): reads 32 bytes, writes 32
    op = op_of(aten.select_copy.int, meta(4, 8), 0, 0, outputs=[meta(8)])
    c = cost_of(op)[0]
    assert (c.bytes_read, c.bytes_written, c.category) == (32, 32, "data_movement")


def test_pack_padded_sequence():
    # (2, 5, 4) batch-first, lengths [5, 3]: read input 160 + lengths 2*8 = 176;
    # write packed data (8, 4) = 128 + batch_sizes 5*8 = 40 -> 168
    from torch.nn.utils.rnn import pack_padded_sequence
    _, c = priced("aten._pack_padded_sequence", lambda t: pack_padded_sequence(t, [5, 3], batch_first=True),
                  torch.randn(2, 5, 4))
    assert (c.flops, c.bytes_read, c.bytes_written, c.category) == (0, 176, 168, "data_movement")


@pytest.mark.parametrize("shape, stride, new_shape, expected", [
    ((2, 3, 4), (12, 4, 1), (6, 4), (4, 1)),            # contiguous: merge the first two dims
    ((2, 3, 4), (12, 4, 1), (2, 12), (12, 1)),          # contiguous: merge the last two
    ((4, 6), (6, 1), (2, 2, 6), (12, 6, 1)),            # split the first dim: 2 rows of 2 rows of 6
    ((4, 4), (6, 1), (4, 2, 2), (6, 2, 1)),             # rows 6 apart, 4 used: a row splits in 2 x 2
    ((4, 4), (6, 1), (16,), None),                      # ... but the rows cannot merge (gap of 2)
    ((4, 3), (1, 4), (12,), None),                      # a transpose does not flatten
    ((2, 3, 4), (1, 2, 6), (6, 4), None),               # reversed strides: dims 0 and 1 are not adjacent
    ((4, 1, 3), (3, 100, 1), (12,), (1,)),              # a size-1 dim's stride does not matter
    ((3, 1, 4), (4, 4, 1), (3, 4), (4, 1)),             # dropping a size-1 dim
    ((6,), (1,), (1, 6, 1), (6, 1, 1)),                 # adding size-1 dims: strides of the elements after
    ((3, 4), (1, 0), (3, 2, 2), (1, 0, 0)),             # an expanded dim splits into expanded dims
    ((3, 4), (1, 0), (12,), None),                      # ... but does not merge with a real one
    ((0, 3), (3, 1), (3, 0), (1, 1)),                   # no elements: any view, unit strides
])
def test_view_strides_follow_aten(shape, stride, new_shape, expected):
    # the strides of x.view(new_shape) as ATen's computeStride gives them (None: the view needs a copy)
    from roofline.costs.shape import view_strides

    assert view_strides(shape, stride, new_shape) == expected
