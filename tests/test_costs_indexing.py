"""Indexing family: gathers read what they gather, scatters write what they update."""

import torch

from roofline.costs import cost_of
from tests.opcapture import capture_ops, meta, op_of, priced

aten = torch.ops.aten


def test_gather_reads_gathered_elements():
    # gather (100, 16) along dim 1 with index (100, 2) int64: 200 elements gathered = 800 B (not 6400)
    # + index 200*8 = 1600 -> read 2400; write 800; 0 FLOPs
    _, c = priced("aten.gather", torch.gather, torch.randn(100, 16), 1, torch.randint(0, 16, (100, 2)))
    assert (c.flops, c.bytes_read, c.bytes_written, c.category) == (0, 2400, 800, "data_movement")


def test_index_select():
    # index_select rows 3 of (100, 16): 3*16*4 = 192 gathered + 3*8 = 24 index -> 216; write 192
    _, c = priced("aten.index_select", torch.index_select, torch.randn(100, 16), 0, torch.tensor([1, 5, 7]))
    assert (c.bytes_read, c.bytes_written) == (216, 192)


def test_advanced_index_and_bool_mask():
    # x[idx] with idx (2,) int64: 2 rows of (8, 8) -> 128 elements = 512 B + 16 B index
    x = torch.randn(4, 8, 8)
    _, c = priced("aten.index", lambda t: t[torch.tensor([0, 1])], x)
    assert (c.bytes_read, c.bytes_written, c.kernels) == (512 + 16, 512, 1)
    # boolean mask: nonzero first (+2 kernels)
    _, c = priced("aten.index", lambda t: t[t > 0], x)
    assert c.kernels == 3


def test_scatter_add_inplace_and_out_of_place():
    # scatter_add_ into (10, 4) with index (6, 4), src (6, 4): 24 updates, 1 add each
    # read index 24*8 = 192 + src 96 + destination elements 96 = 384; write 96
    dst = torch.zeros(10, 4)
    idx = torch.randint(0, 10, (6, 4))
    src = torch.randn(6, 4)
    _, c = priced("aten.scatter_add_", lambda d, i, s: d.scatter_add_(0, i, s), dst, idx, src)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (24, 384, 96, 1)
    # out-of-place: + copy of self (read 160, write 160), 2 kernels
    _, c = priced("aten.scatter_add", torch.scatter_add, dst, 0, idx, src)
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (24, 384 + 160, 96 + 160, 2)


def test_scatter_plain_no_flops():
    _, c = priced("aten.scatter", torch.scatter, torch.zeros(10, 4), 0, torch.randint(0, 10, (6, 4)),
                  torch.randn(6, 4))
    assert c.flops == 0


def test_index_put_accumulate():
    # x[idx] += v with idx (3,) into (10, 4): 12 positions, accumulate 1 FLOP each
    x = torch.zeros(10, 4)
    _, c = priced("aten.index_put_", lambda t: t.index_put_((torch.tensor([1, 2, 3]),), torch.ones(3, 4),
                                                             accumulate=True), x)
    assert c.flops == 12 and c.bytes_written == 48


def test_masked_fill_is_a_select():
    # masked_fill (4, 8): 32 FLOPs; read x 128 + mask 32; write 128
    _, c = priced("aten.masked_fill", lambda t: t.masked_fill(t > 0, 0.0), torch.randn(4, 8))
    assert (c.flops, c.bytes_read, c.bytes_written, c.category) == (32, 160, 128, "pointwise")


def test_nonzero_and_where_cond():
    # nonzero on (4, 8): 32 compares, 2 kernels (+ host sync)
    _, c = priced("aten.nonzero", torch.nonzero, torch.randn(4, 8))
    assert c.flops == 32 and c.kernels == 2
    c, ok = cost_of(op_of(aten.where.default, meta(4, 8, dtype=torch.bool), outputs=[meta(5, dtype=torch.int64)]))
    assert ok and c.flops == 32


def test_topk_sort():
    # topk k=3 on (4, 16) along -1: 64 compares + 4 slices * 3 * ceil(log2 3)=2 -> 88; 2 kernels
    _, c = priced("aten.topk", lambda t: torch.topk(t, 3), torch.randn(4, 16))
    assert (c.flops, c.kernels) == (88, 2)
    # sort (4, 16) along -1: 64 * log2(16)=4 -> 256; 1 kernel (slice fits in shared memory)
    _, c = priced("aten.sort", torch.sort, torch.randn(4, 16))
    assert (c.flops, c.kernels) == (256, 1)
    assert c.bytes_written == 64 * 4 + 64 * 8


def test_searchsorted():
    # 10 queries in 16 boundaries: 10 * 4 = 40 compares
    _, c = priced("aten.searchsorted", torch.searchsorted, torch.arange(16.0), torch.rand(10) * 16)
    assert c.flops == 40


def test_every_captured_indexing_op_is_priced():
    x = torch.randn(6, 5)
    ops = capture_ops(lambda t: (t.index_fill(0, torch.tensor([1]), 0.0), t.take(torch.tensor([0, 3])),
                                 t.masked_select(t > 0), t.index_add(0, torch.tensor([0, 1]), torch.ones(2, 5)),
                                 torch.median(t, 1), torch.unique(t)), x)
    assert all(cost_of(o)[1] for o in ops), [o.name for o in ops if not cost_of(o)[1]]


def test_bincount_histc():
    # bincount of 20 ints: 20 adds; histc of 32 floats: 4 each = 128; 3 kernels each
    _, c = priced("aten.bincount", torch.bincount, torch.randint(0, 5, (20,)))
    assert (c.flops, c.kernels) == (20, 3)
    _, c = priced("aten.histc", lambda t: torch.histc(t, 10), torch.randn(4, 8))
    assert c.flops == 128


def test_sort_compares_and_kernels_by_slice_length():
    # (4, 2) along the last dim: ceil(log2 2) = 1 compare per element: 8
    _, c = priced("aten.sort", torch.sort, torch.randn(4, 2))
    assert c.flops == 8
    # one row of 4096: 4096 * 12 = 49152 compares, one kernel (a slice up to 4096 sorts in one block)
    _, c = priced("aten.sort", torch.sort, torch.randn(4096))
    assert (c.flops, c.kernels) == (49152, 1)
    # one row of 4097: ceil(log2 4097) = 13, 4097 * 13 = 53261 compares, 4 kernels (the segmented sort)
    _, c = priced("aten.sort", torch.sort, torch.randn(4097))
    assert (c.flops, c.kernels) == (53261, 4)


def test_sort_of_a_python_list_runs_on_the_host():
    # aten.sort.int sorts a Python list in place: no FLOPs counted, no bytes, no kernel
    c, ok = cost_of(op_of(aten.sort.int, [3, 1, 2], False))
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (0, 0, 0, 0)
