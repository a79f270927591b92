"""Copy family: read at the source dtype, written at the destination dtype."""

import torch

from roofline.costs import cost_of
from tests.opcapture import meta, op_of, priced

aten = torch.ops.aten


def test_clone():
    _, c = priced("aten.clone", torch.clone, torch.randn(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels, c.category) == (0, 128, 128, 1, "data_movement")


def test_cast_reads_source_dtype_writes_destination_dtype():
    # fp32 -> fp16 of 32 elements: read 128, write 64
    _, c = priced("aten._to_copy", lambda t: t.half(), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (128, 64)
    # int8 -> fp32: read 32, write 128
    _, c = priced("aten._to_copy", lambda t: t.float(), torch.zeros(4, 8, dtype=torch.int8))
    assert (c.bytes_read, c.bytes_written) == (32, 128)


def test_copy_inplace_does_not_read_destination():
    # dst (4, 8) fp16 .copy_(src (8,) fp32 broadcast): read 32 B of src, write 64 B of dst
    _, c = priced("aten.copy_", lambda d, s: d.copy_(s), torch.zeros(4, 8, dtype=torch.float16), torch.randn(8))
    assert (c.bytes_read, c.bytes_written) == (32, 64)


def test_contiguous_of_transposed():
    _, c = priced("aten.clone", lambda t: t.t().contiguous(), torch.randn(4, 8))
    assert (c.bytes_read, c.bytes_written) == (128, 128)


def test_to_and_contiguous_whole_ops():
    # kept whole: same dtype/device -> free; a cast -> copy; contiguous of contiguous -> free
    x = meta(4, 8)
    assert cost_of(op_of(aten.to.dtype, x, torch.float32, outputs=[x]))[0].kernels == 0
    c = cost_of(op_of(aten.to.dtype, x, torch.float16, outputs=[meta(4, 8, dtype=torch.float16)]))[0]
    assert (c.bytes_read, c.bytes_written) == (128, 64)
    assert cost_of(op_of(aten.contiguous.default, x, outputs=[x]))[0].bytes == 0


def test_cross_device_cast_is_two_kernels():
    # cpu fp32 -> cuda fp16: memcpy then cast
    op = op_of(aten._to_copy.default, meta(4, 8), dtype=torch.float16, device=torch.device("cuda"),
               outputs=[meta(4, 8, dtype=torch.float16, device="cuda")])
    assert cost_of(op)[0].kernels == 2
