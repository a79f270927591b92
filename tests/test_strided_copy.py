"""Copies through a strided layout: clone/contiguous of a permuted tensor and cat of strided inputs
priced on the calibrated strided-copy families (roofline.model.kernels._strided_copy)."""

import math

import pytest
import torch

from calibrate.memory import STRIDED_OPS, _selection_call
from roofline.graph.ops import TensorMeta
from roofline.model.device import DeviceModel
from roofline.model.kernels import STRIDED_RUN, copy_run
from roofline.pipeline import analyze
from roofline.profiles import load_profile_file
from tests.test_family_curves import FIXTURE, _flat_curve, _profile_with

RUN_RATE, TRANSPOSE_RATE, CAT_RATE, CONTIGUOUS_CAT_RATE = 2e12, 1e12, 1.5e12, 3e12


def _strided_profile():
    return _profile_with(
        _flat_curve("strided_copy", "float32", RUN_RATE), _flat_curve("transpose_copy", "float32", TRANSPOSE_RATE),
        _flat_curve("cat_strided", "float32", CAT_RATE), _flat_curve("cat", "float32", CONTIGUOUS_CAT_RATE),
    )


def _memory_s(fn, inputs, profile, device="cuda", target="aten."):
    report = analyze(fn, inputs, profile, device=device, batch_sweep=False)
    (op,) = [o for o in report.ops if o.target.startswith(target) and o.memory_s > 0]
    return op.memory_s


def test_a_permuted_copy_prices_at_the_strided_rate_of_its_inner_run():
    profile, plain = _strided_profile(), _profile_with(_flat_curve("cat", "float32", CONTIGUOUS_CAT_RATE))
    contiguous = lambda t: t.contiguous()  # noqa: E731
    x = torch.randn(4, 64, 8, 32)
    nbytes = 2 * x.numel() * 4
    # heads merged (rows of 32 stay whole) and a transposed matrix (inner runs of one element)
    assert _memory_s(contiguous, (x.permute(0, 2, 1, 3),), profile) == pytest.approx(nbytes / RUN_RATE, rel=1e-6)
    assert _memory_s(contiguous, (x.transpose(2, 3),), profile) == pytest.approx(nbytes / TRANSPOSE_RATE, rel=1e-6)
    # rows of 8: between the two in log(run)
    y = torch.randn(4, 64, 8, 8)
    f = math.log(8) / math.log(STRIDED_RUN)
    rate = math.exp((1 - f) * math.log(TRANSPOSE_RATE) + f * math.log(RUN_RATE))
    assert _memory_s(contiguous, (y.permute(0, 2, 1, 3),), profile) == pytest.approx(2 * y.numel() * 4 / rate, rel=1e-6)
    # flat copies stay on the copy curve: a contiguous clone, and a clone that keeps a permuted
    # dense layout (preserve_format)
    for fn, t in ((lambda t: t.clone(), x), (lambda t: t.clone(), x.permute(0, 2, 1, 3))):
        assert _memory_s(fn, (t,), profile) == pytest.approx(_memory_s(fn, (t,), plain), rel=1e-9)
    # a profile without the strided families prices a strided copy as before, on the copy curve
    strided = x.permute(0, 2, 1, 3)
    assert _memory_s(contiguous, (strided,), plain) == pytest.approx(_memory_s(lambda t: t.clone(), (x,), plain), rel=1e-9)


def test_a_cat_of_strided_inputs_runs_atens_batched_kernel_one_grid_per_input():
    profile = _strided_profile()
    cat = lambda *ts: torch.cat(ts, dim=1)  # noqa: E731
    a, b = torch.randn(2, 64, 8, 32).permute(0, 2, 1, 3), torch.randn(2, 64, 8, 32).permute(0, 2, 1, 3)
    nbytes = 2 * 2 * a.numel() * 4
    # two strided inputs of one size fill the GPU
    assert _memory_s(cat, (a, b), profile, target="aten.cat") == pytest.approx(nbytes / CAT_RATE, rel=1e-6)
    # contiguous inputs: ATen's contiguous kernel, the cat family
    ac, bc = a.contiguous(), b.contiguous()
    assert _memory_s(cat, (ac, bc), profile, target="aten.cat") == pytest.approx(nbytes / CONTIGUOUS_CAT_RATE, rel=1e-6)
    # a class token (expanded) joined to transposed patches: the patches' grid fills half the GPU
    token = torch.randn(1, 1, 768).expand(8, 1, 768)
    patches = torch.randn(8, 768, 196).transpose(1, 2)
    elements = 8 * 197 * 768
    share = (8 * 196 * 768) / (8 * 196 * 768 + 8 * 768)
    expected = 2 * elements * 4 * (share / 0.5) / CAT_RATE
    assert _memory_s(cat, (token, patches), profile, target="aten.cat") == pytest.approx(expected, rel=1e-6)
    # a legacy 1-D empty input (a key-value cache's first step) sends contiguous inputs there too
    cache = torch.randn(4, 8, 128, 64)
    kv = lambda e, t: torch.cat([e, t], dim=-2)  # noqa: E731
    assert _memory_s(kv, (torch.empty(0), cache), profile, target="aten.cat") == pytest.approx(2 * 2 * cache.numel() * 4 / CAT_RATE, rel=1e-6)
    # the CPU's cat copies input by input: no grid share
    cpu = load_profile_file(FIXTURE)
    cpu.host.measurements.pointwise = list(cpu.host.measurements.pointwise) + [
        _flat_curve(op, "float32", rate) for op, rate in (("strided_copy", RUN_RATE), ("transpose_copy", TRANSPOSE_RATE), ("cat_strided", CAT_RATE))
    ]
    host = DeviceModel(cpu.host, "cpu")
    cpu_bytes = 2 * elements * 4
    assert _memory_s(cat, (token, patches), cpu, device="cpu", target="aten.cat") == pytest.approx(cpu_bytes / host.family_bytes_per_s("cat_strided", cpu_bytes), rel=1e-6)


def test_the_calibrated_copies_walk_the_runs_the_model_interpolates_between():
    for op in STRIDED_OPS:
        fn, moved = _selection_call(op, 1 << 14, "cpu", torch.float32)
        assert moved == 2 * 4 * (1 << 14)  # each element read once and written once, as priced
    for op, run in (("strided_copy", STRIDED_RUN), ("transpose_copy", 1)):
        fn, _ = _selection_call(op, 1 << 14, "cpu", torch.float32)
        (view,) = [c.cell_contents for c in fn.__closure__]
        out = TensorMeta.contiguous(view.shape)
        assert copy_run(TensorMeta.of(view), out) == run


def test_layer_norm_copies_a_transposed_input_at_the_transposed_rate():
    """layer_norm makes a strided input contiguous first (timm's Mixer normalizes a transposed
    tensor): with the strided families that copy is a run-1 strided copy, not a flat stream."""
    from roofline.model.kernels import contiguous_pass_s

    x = torch.randn(4, 64, 96).transpose(1, 2)  # (4, 96, 64), channels innermost in memory
    fn = lambda t: torch.nn.functional.layer_norm(t, (64,))  # noqa: E731
    profile, plain = _strided_profile(), _profile_with(_flat_curve("cat", "float32", CONTIGUOUS_CAT_RATE))
    from roofline.graph.capture import capture

    op = next(o for o in capture(fn, (x,)).ops if o.packet == "aten.native_layer_norm")
    from roofline.costs import cost_of

    cost = cost_of(op)[0]
    strided_s = contiguous_pass_s(op, cost, DeviceModel(profile.gpu, "cuda"))
    assert strided_s == pytest.approx(2 * x.numel() * 4 / TRANSPOSE_RATE, rel=1e-6)
    flat = DeviceModel(plain.gpu, "cuda")  # without the families: the flat copy curve
    nbytes = 2 * x.numel() * 4
    assert contiguous_pass_s(op, cost, flat) == pytest.approx(nbytes / flat.bandwidth.bytes_per_s(nbytes, "copy"), rel=1e-9)


def test_an_elementwise_op_with_a_transposed_operand_streams_as_a_strided_copy():
    """x.transpose(1, 2) + pos (Whisper adds its positional embedding to a transposed conv output):
    ATen's kernel computes an offset per element, as a strided copy of one-element runs does; an operand laid
    out as the output, or an expanded (broadcast) one, keeps the elementwise curves."""
    profile = _strided_profile()
    x, pos = torch.randn(4, 96, 64), torch.randn(4, 64, 96)
    add = lambda a, b: a + b  # noqa: E731
    nbytes = 3 * x.numel() * 4
    assert _memory_s(add, (x.transpose(1, 2), pos), profile, target="aten.add") == pytest.approx(nbytes / TRANSPOSE_RATE, rel=1e-6)
    plain = _profile_with(_flat_curve("cat", "float32", CONTIGUOUS_CAT_RATE))
    for a, b in ((pos, pos.clone()), (pos, torch.randn(64, 96).expand(4, 64, 96))):
        assert _memory_s(add, (a, b), profile, target="aten.add") == pytest.approx(_memory_s(add, (a, b), plain, target="aten.add"), rel=1e-9)
