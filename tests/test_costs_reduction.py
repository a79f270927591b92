"""Reduction family: per-input-element rules, outputs written, losses."""

import torch
import torch.nn.functional as F

from tests.opcapture import priced

X = (4, 16)  # 64 elements, 256 bytes


def test_sum_dim():
    # sum over dim 1: 64 adds; read 256; write 4*4 = 16
    _, c = priced("aten.sum", lambda t: t.sum(1), torch.randn(*X))
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (64, 256, 16, 1)
    assert c.category == "reduction"


def test_mean_full():
    # mean of 64: 64 adds + 1 divide = 65; write 4 bytes
    _, c = priced("aten.mean", torch.mean, torch.randn(*X))
    assert (c.flops, c.bytes_written) == (65, 4)


def test_max_dim_values_and_indices():
    # max over dim 1: 64 compares; write values 16 + int64 indices 32 = 48
    _, c = priced("aten.max", lambda t: torch.max(t, 1), torch.randn(*X))
    assert (c.flops, c.bytes_written) == (64, 48)


def test_max_binary_is_elementwise():
    # torch.max(a, b) elementwise: 64 FLOPs, category pointwise, read 512
    _, c = priced("aten.maximum", torch.max, torch.randn(*X), torch.randn(*X))
    assert (c.flops, c.bytes_read, c.category) == (64, 512, "pointwise")


def test_argmax_any_cumsum():
    assert priced("aten.argmax", torch.argmax, torch.randn(*X))[1].flops == 64
    assert priced("aten.any", torch.any, torch.randn(*X) > 0)[1].flops == 64
    _, c = priced("aten.cumsum", torch.cumsum, torch.randn(*X), 1)
    assert (c.flops, c.bytes_written) == (64, 256)


def test_var_std_var_mean():
    # var over all: 3*64 + 2*1 = 194; std: 3*64 + 3 = 195; var_mean dim 1: 3*64 + 2*4 = 200
    assert priced("aten.var", torch.var, torch.randn(*X))[1].flops == 194
    assert priced("aten.std", torch.std, torch.randn(*X))[1].flops == 195
    _, c = priced("aten.var_mean", torch.var_mean, torch.randn(*X), 1)
    assert c.flops == 200 and c.bytes_written == 2 * 16


def test_norms():
    # 2-norm: 2*64 + 1 sqrt = 129; 1-norm: 2*64 = 128; 3-norm: 5*64 + 3 = 323
    assert priced("aten.linalg_vector_norm", torch.norm, torch.randn(*X))[1].flops == 129
    assert priced("aten.linalg_vector_norm", lambda t: torch.linalg.vector_norm(t, 1), torch.randn(*X))[1].flops == 128
    assert priced("aten.linalg_vector_norm", lambda t: torch.linalg.vector_norm(t, 3), torch.randn(*X))[1].flops == 323


def test_logsumexp_kernels():
    # logsumexp over dim 1: 4*64 + 2*4 = 264; ATen launches 9 kernels for it
    _, c = priced("aten.logsumexp", torch.logsumexp, torch.randn(*X), 1)
    assert (c.flops, c.kernels) == (264, 9)


def test_mse_loss():
    # mean reduction: 3*64 + 1 = 193; 2 kernels; read 512; write 4
    _, c = priced("aten.mse_loss", F.mse_loss, torch.randn(*X), torch.randn(*X))
    assert (c.flops, c.kernels, c.bytes_read, c.bytes_written) == (193, 2, 512, 4)
    # reduction='none': 2*64 = 128, one kernel, writes 256
    _, c = priced("aten.mse_loss", lambda a, b: F.mse_loss(a, b, reduction="none"),
                  torch.randn(*X), torch.randn(*X))
    assert (c.flops, c.kernels, c.bytes_written) == (128, 1, 256)


def test_nll_loss_reads_only_gathered_logprobs():
    # cross_entropy = log_softmax + nll_loss_forward; nll reads 4 gathered floats (16 B) + 4 int64 targets
    # (32 B), not the (4, 10) input; FLOPs 4 + 1 (mean)
    _, c = priced("aten.nll_loss_forward", F.cross_entropy, torch.randn(4, 10), torch.randint(0, 10, (4,)))
    assert (c.flops, c.bytes_read) == (5, 16 + 32)


def test_rfft():
    # rfft of 4 rows of 16 points: 4 * (5 * 16 * 4) / 2 = 640; read 256, write (4, 9) complex64 = 288
    _, c = priced("aten._fft_r2c", torch.fft.rfft, torch.randn(*X))
    assert (c.flops, c.bytes_read, c.bytes_written) == (640, 256, 288)
    # complex fft: 4 * 5 * 16 * 4 = 1280
    _, c = priced("aten._fft_c2c", torch.fft.fft, torch.randn(*X, dtype=torch.complex64))
    assert c.flops == 1280


def test_sum_of_a_python_list_runs_on_the_host():
    # aten.sum.int adds a Python list's numbers: no FLOPs counted, no bytes, no kernel
    from roofline.costs import cost_of
    from tests.opcapture import op_of

    c, ok = cost_of(op_of(torch.ops.aten.sum.int, [1, 2, 3]))
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (0, 0, 0, 0)


def test_norm_with_p_none_is_the_two_norm():
    # norm(x (4, 8), p=None, dim=[1]): the 2-norm, square and add per element (2 * 32) + a sqrt per row (4) = 68
    from roofline.costs import cost_of
    from roofline.costs.reduction import vector_norm_flops
    from tests.opcapture import meta, op_of

    c, _ = cost_of(op_of(torch.ops.aten.norm.ScalarOpt_dim, meta(4, 8), None, [1], outputs=[meta(4)]))
    assert c.flops == 2 * 32 + 4
    assert vector_norm_flops("fro") == (2, 1)  # the Frobenius norm is the 2-norm of the elements


def test_fft_point_counts():
    from roofline.costs import cost_of
    from tests.opcapture import meta, op_of

    c64 = torch.complex64
    # c2c over a last dim of 2 points, 3 transforms: 5 * 2 * log2 2 = 10 each, 30
    assert priced("aten._fft_c2c", torch.fft.fft, torch.randn(3, 2, dtype=c64))[1].flops == 30
    # a 1-D (8,) transform with dim given as -1: 5 * 8 * 3 = 120
    op = op_of(torch.ops.aten._fft_c2c.default, meta(8, dtype=c64), [-1], 0, True, outputs=[meta(8, dtype=c64)])
    assert cost_of(op)[0].flops == 120
    # over a dim of size 1: 3 transforms of 1 point, 5 * 1 * 1 = 5 each (log2 taken as at least 1), 15
    assert priced("aten._fft_c2c", torch.fft.fft, torch.randn(3, 1, dtype=c64))[1].flops == 15


def test_nll_loss_sum_has_no_mean():
    # nll_loss of (4, 5) log-probabilities, 4 targets, reduction='sum': 1 per target, no divide: 4
    logp = torch.randn(4, 5).log_softmax(-1)
    _, c = priced("aten.nll_loss_forward", lambda a, t: F.nll_loss(a, t, reduction="sum"), logp, torch.tensor([0, 1, 2, 3]))
    assert c.flops == 4
