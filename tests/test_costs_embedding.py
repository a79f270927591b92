"""Embedding family: bytes are the gathered rows, not the table."""

import torch
import torch.nn as nn

from tests.opcapture import priced


def test_embedding_reads_rows_not_table():
    # table (1000, 64) fp32 = 256000 bytes; 20 indices (int64, 160 B) gather 20 rows * 256 B = 5120
    # read 5120 + 160 = 5280; write (4, 5, 64) * 4 = 5120; 0 FLOPs
    _, c = priced("aten.embedding", nn.Embedding(1000, 64), torch.randint(0, 1000, (4, 5)))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (0, 5280, 5120, 1)
    assert c.category == "data_movement"


def test_embedding_rows_capped_at_table_size():
    # 50 lookups into a 10-row table: at most 10 distinct rows (10 * 8 * 4 = 320) + 400 index bytes
    _, c = priced("aten.embedding", nn.Embedding(10, 8), torch.randint(0, 10, (50,)))
    assert c.bytes_read == 320 + 400


def test_embedding_bag_sum():
    # 4 bags of 5 indices, dim 8: gathered 20 rows * 32 B = 640; indices 20*8 = 160; offsets 4*8 = 32
    # FLOPs: 1 add per gathered element: 20 * 8 = 160 (mode mean adds 4*8 = 32 divides)
    _, c = priced("aten._embedding_bag", nn.EmbeddingBag(100, 8, mode="sum"), torch.randint(0, 100, (4, 5)))
    assert c.flops == 160 and c.bytes_read == 640 + 160 + 32 and c.kernels == 3
    _, c = priced("aten._embedding_bag", nn.EmbeddingBag(100, 8, mode="mean"), torch.randint(0, 100, (4, 5)))
    assert c.flops == 192


def test_embedding_max_norm_renorm():
    # max_norm: embedding_renorm_ on 3 looked-up rows of dim 4: 3 FLOPs * 12 = 36; rows 48 B read+written
    _, c = priced("aten.embedding_renorm_", nn.Embedding(10, 4, max_norm=1.0), torch.tensor([1, 2, 3]))
    assert (c.flops, c.bytes_written) == (36, 48) and c.bytes_read == 48 + 24


def test_a_one_row_table():
    # nn.Embedding(1, 4) looking up [0, 0]: one distinct row of 4 floats = 16 bytes gathered + 2 int64 indices
    # 16 = 32 read; (2, 4) floats = 32 written
    _, c = priced("aten.embedding", nn.Embedding(1, 4), torch.tensor([0, 0]))
    assert (c.bytes_read, c.bytes_written) == (32, 32)
    # EmbeddingBag(1, 4, sum) over one bag of 3 lookups: 3 rows of 4 added, 12 FLOPs
    _, c = priced("aten._embedding_bag", nn.EmbeddingBag(1, 4, mode="sum"), torch.zeros(1, 3, dtype=torch.long))
    assert c.flops == 12
    # max_norm renormalizes the one looked-up row of 4: 3 FLOPs per element, 12
    _, c = priced("aten.embedding_renorm_", nn.Embedding(1, 4, max_norm=1.0), torch.tensor([0]))
    assert c.flops == 12
