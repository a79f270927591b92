"""Calibrated convolutions: schema checks, the conv-to-GEMM ratio, and its use in prediction."""

from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from calibrate.conv import ConvShape, measure_conv
from roofline.pipeline import analyze
from roofline.costs.conv import conv_flops, conv_gemm
from roofline.model.curves import ConvKey, ConvModel, conv_aligned, conv_kind, conv_narrow_plane, conv_plane_aligned
from roofline.model.device import DeviceModel
from roofline.schema.profile import ConvCurve, ConvPoint, Stat
from roofline.profiles import load_profile_file
from roofline.costs import cost_of

FIXTURE = Path(__file__).parent / "fixtures" / "h100_profile.json"


def _point(batch, cin, cout, size, kernel, stride, padding, time_s):
    out = (size + 2 * padding - kernel) // stride + 1
    flops = 2 * batch * out * out * cout * cin * kernel * kernel
    return ConvPoint(
        batch=batch, in_channels=cin, out_channels=cout, size=size, kernel=kernel, stride=stride, padding=padding,
        time=Stat(median_s=time_s, iqr_s=0.0, samples=5), flop_per_s=flops / time_s,
    )


def _gemm_time(dev, dtype, batch, cin, cout, size, kernel, stride, padding):
    out = (size + 2 * padding - kernel) // stride + 1
    _, m, n, k = conv_gemm((batch, cin, size, size), (cout, cin, kernel, kernel), (batch, cout, out, out), False)
    return dev.matmul_model(dtype).time_s(m, n, k)


def _curve_at_ratios(dev, ratios: dict) -> ConvCurve:
    """A bf16 curve whose 3x3 points run `ratios[3]` times and 1x1 points `ratios[1]` times the GEMM curve."""
    shapes = [(8, 64, 64, 56, 3, 1, 1), (64, 256, 256, 56, 3, 1, 1), (8, 256, 64, 56, 1, 1, 0), (64, 256, 64, 56, 1, 1, 0)]
    return ConvCurve(dtype="bfloat16", tf32=False, points=[
        _point(*s, time_s=ratios[s[4]] * _gemm_time(dev, "bfloat16", *s)) for s in shapes
    ])


def test_point_rejects_a_rate_that_does_not_match_its_time():
    good = _point(1, 64, 64, 56, 3, 1, 1, 1e-4)
    with pytest.raises(ValidationError, match="flop_per_s"):
        ConvPoint(**{**good.model_dump(), "flop_per_s": good.flop_per_s * 2})


def test_point_rejects_a_kernel_larger_than_its_padded_input():
    with pytest.raises(ValidationError, match="does not fit"):
        _point(1, 3, 8, 2, 7, 1, 0, 1e-5)


def test_ratio_reproduces_calibrated_points_and_picks_the_filter_size():
    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    curve = _curve_at_ratios(dev, {3: 1.5, 1: 0.6})
    model = ConvModel(curve, dev.matmul_model("bfloat16"))
    for p in curve.points:
        _, m, n, k = conv_gemm((p.batch, p.in_channels, p.size, p.size), (p.out_channels, p.in_channels, p.kernel, p.kernel),
                               (p.batch, p.out_channels, p.out_size, p.out_size), False)
        assert model.ratio(m, n, k, p.kernel**2) == pytest.approx(1.5 if p.kernel == 3 else 0.6, rel=1e-6)
    # a 5x5 filter (no such points) takes the nearest points of any size: between the two ratios
    assert 0.6 <= model.ratio(100_000, 128, 3200, 25) <= 1.5


def test_calibrated_ratio_scales_a_models_conv_kernel_time():
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    model = torch.nn.Conv2d(64, 64, 3, padding=1, bias=False, dtype=torch.bfloat16)
    inputs = (torch.randn(8, 64, 56, 56, dtype=torch.bfloat16),)

    def conv_kernel_s(p):
        report = analyze(model, inputs, p, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if o.category == "conv"]
        return op.kernel_s

    profile.gpu.measurements.conv = []  # the GEMM curve alone
    before = conv_kernel_s(profile)
    profile.gpu.measurements.conv = [_curve_at_ratios(dev, {3: 2.0, 1: 1.0})]
    after = conv_kernel_s(profile)
    assert after == pytest.approx(2.0 * before, rel=0.02)


def test_grouped_convs_stay_on_the_gemm_curve():
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    model = torch.nn.Conv2d(64, 64, 3, padding=1, groups=64, bias=False, dtype=torch.bfloat16)
    inputs = (torch.randn(8, 64, 56, 56, dtype=torch.bfloat16),)
    profile.gpu.measurements.conv = []
    before = analyze(model, inputs, profile, device="cuda", batch_sweep=False).ops
    profile.gpu.measurements.conv = [_curve_at_ratios(dev, {3: 2.0, 1: 1.0})]
    after = analyze(model, inputs, profile, device="cuda", batch_sweep=False).ops
    assert [o.kernel_s for o in after] == [o.kernel_s for o in before]


def test_measure_conv_on_the_cpu_gives_a_valid_curve():
    curve = measure_conv("float32", [(1, 8, 8, 16, 3, 1, 1), (1, 8, 16, 16, 1, 1, 0)], "cpu", budget_s=0.01, warnings=[])
    assert curve.dtype == "float32" and curve.tf32 is False
    assert [p.kernel for p in curve.points] == [3, 1]
    assert all(p.time.median_s > 0 for p in curve.points)


def _keyed_point(shape, time_s):
    """A point of ``calibrate.conv.ConvShape`` timed at ``time_s``."""
    s = ConvShape(*shape)
    flops = ConvPoint.model_construct(**s._asdict()).flops
    return ConvPoint(**s._asdict(), time=Stat(median_s=time_s, iqr_s=0.0, samples=5), flop_per_s=flops / time_s)


def _roofline_s(dev, dtype, shape):
    s = ConvShape(*shape)
    x, w, out = ConvPoint.model_construct(**s._asdict()).shapes()
    _, m, n, k = conv_gemm(x, w, out, s.transposed)
    return dev.matmul_model(dtype).time_s(m, n, k), (m, n, k)


# one shape per key, each at its own ratio to the GEMM curve
_KEYED = {
    ConvShape(32, 64, 64, 56, 3, 1, 1): 1.0,
    ConvShape(32, 3, 32, 224, 3, 2, 1): 4.0,  # 3-channel input: not 16-byte aligned in bf16
    ConvShape(32, 64, 128, 56, 3, 2, 1): 1.3,
    ConvShape(32, 256, 256, 14, 1, 1, 0): 2.0,
    ConvShape(32, 256, 512, 28, 1, 2, 0): 3.0,
    ConvShape(8, 128, 128, 1024, 3, 1, 1, dims=1): 1.5,
    ConvShape(32, 128, 64, 56, 2, 2, 0, transposed=True): 2.5,
}


def _keyed_curve(dev, ratios=_KEYED):
    return ConvCurve(dtype="bfloat16", tf32=False, keyed=True, points=[
        _keyed_point(s, r * _roofline_s(dev, "bfloat16", s)[0]) for s, r in ratios.items()
    ])


def test_point_flops_and_shapes_agree_with_the_op_formula_for_every_kind():
    for s in [ConvShape(2, 8, 16, 32, 3, 2, 1, dims=1), ConvShape(2, 8, 16, 9, 3, 1, 1, dims=3),
              ConvShape(2, 8, 4, 7, 2, 2, 0, transposed=True), ConvShape(2, 3, 16, 32, 4, 4, 0)]:
        p = ConvPoint.model_construct(**s._asdict())
        x, w, out = p.shapes()
        conv = {(1, False): torch.nn.functional.conv1d, (3, False): torch.nn.functional.conv3d,
                (2, True): torch.nn.functional.conv_transpose2d, (2, False): torch.nn.functional.conv2d}[(s.dims, s.transposed)]
        real = conv(torch.zeros(x), torch.zeros(w), None, s.stride, s.padding)
        assert tuple(real.shape) == out
        assert p.flops == conv_flops(x, w, out, s.transposed)


def test_keyed_ratio_picks_kind_alignment_taps_and_stride():
    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    model = ConvModel(_keyed_curve(dev), dev.matmul_model("bfloat16"))
    assert model.keyed
    # a pixel's channels fill 16-byte vectors: 8 bf16 channels do, 4 do not; 4 float32 channels do
    assert [conv_aligned(c, 2) for c in (3, 4, 8, 99, 120)] == [False, False, True, False, True]
    assert conv_aligned(4, 4) and not conv_aligned(6, 4)
    for s, ratio in _KEYED.items():
        _, (m, n, k) = _roofline_s(dev, "bfloat16", s)
        key = ConvKey(conv_kind(s.dims, s.transposed), s.kernel**s.dims, s.stride > 1, conv_aligned(s.in_channels, 2))
        assert model.ratio(m, n, k, key.taps, key) == pytest.approx(ratio, rel=1e-6)
    # a 16x16 patch filter over 3 channels: the unaligned points (taps nearest in log: 3x3) decide, whatever its size
    patch = ConvKey("2d", 256, True, False)
    assert model.ratio(6272, 768, 768, 256, patch) == pytest.approx(4.0, rel=1e-6)
    # a 3-d convolution without 3-d points takes the 2-d ones of its taps (27: nearest 9), stride 1
    assert model.ratio(200_000, 64, 864, 27, ConvKey("3d", 27, False, True)) == pytest.approx(1.0, rel=1e-6)


def test_half_precision_1x1_convolutions_key_on_their_output_planes_alignment():
    """An NCHW 1x1 convolution of stride 1 is a batched GEMM over the output plane; in half precision
    cuDNN gives one with a 16-byte plane (28x28 = 784 positions) to cuBLAS and runs a 14x14 or 7x7
    plane on its own kernels (benchmarks/results/h100_conv_channels.json: 58 of 58 aligned planes
    ran nvjet, none of the others did). Each prices from the points of its kind."""
    assert conv_plane_aligned("2d", 1, False, 28 * 28, 2) and not conv_plane_aligned("2d", 1, False, 14 * 14, 2)
    assert conv_plane_aligned("2d", 1, False, 7 * 7, 4), "float32 runs its own GEMMs either way: no key"
    assert conv_plane_aligned("2d", 9, False, 7 * 7, 2) and conv_plane_aligned("2d", 1, True, 7 * 7, 2), "3x3 and strided: no key"
    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    aligned, unaligned = ConvShape(32, 128, 256, 28, 1, 1, 0), ConvShape(32, 128, 256, 14, 1, 1, 0)
    curve = ConvCurve(dtype="bfloat16", tf32=False, keyed=True, points=[
        _keyed_point(aligned, 1.0 * _roofline_s(dev, "bfloat16", aligned)[0]),
        _keyed_point(unaligned, 3.0 * _roofline_s(dev, "bfloat16", unaligned)[0]),
    ])
    model = ConvModel(curve, dev.matmul_model("bfloat16"))
    # shapes nearer the other point in (m, n, k) still take their own kind's ratio: an aligned
    # 16x16 plane near the unaligned point, an unaligned 7x7 plane near the aligned one
    aligned_16x16 = ConvKey("2d", 1, False, True, conv_plane_aligned("2d", 1, False, 16 * 16, 2))
    unaligned_7x7 = ConvKey("2d", 1, False, True, conv_plane_aligned("2d", 1, False, 7 * 7, 2))
    assert model.ratio(32 * 256, 256, 128, 1, aligned_16x16) == pytest.approx(1.0, rel=1e-6)
    assert model.ratio(32 * 49 * 16, 256, 128, 1, unaligned_7x7) == pytest.approx(3.0, rel=1e-6)


def test_a_channels_last_1x1_convolution_is_not_keyed_on_its_plane():
    """The plane leads the GEMM of an NCHW 1x1 convolution only: a channels-last one over a 14x14
    plane prices like an aligned one."""
    from roofline.graph.ops import CapturedOp, TensorMeta
    from roofline.model.kernels import _conv_ratio

    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    aligned, unaligned = ConvShape(32, 128, 256, 28, 1, 1, 0), ConvShape(32, 128, 256, 14, 1, 1, 0)
    curve = ConvCurve(dtype="bfloat16", tf32=False, keyed=True, points=[
        _keyed_point(aligned, 1.0 * _roofline_s(dev, "bfloat16", aligned)[0]),
        _keyed_point(unaligned, 3.0 * _roofline_s(dev, "bfloat16", unaligned)[0]),
    ])
    dev.conv[("bfloat16", False)] = ConvModel(curve, dev.matmul_model("bfloat16"))
    w = TensorMeta.contiguous((256, 128, 1, 1), torch.bfloat16)
    out = TensorMeta.contiguous((32, 256, 14, 14), torch.bfloat16)

    def ratio(x):
        op = CapturedOp(index=0, target=torch.ops.aten.convolution.default, args=(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1), kwargs={}, outputs=(out,))
        return _conv_ratio(op, cost_of(op)[0], dev, False)

    nchw = TensorMeta.contiguous((32, 128, 14, 14), torch.bfloat16)
    channels_last = TensorMeta(shape=(32, 128, 14, 14), dtype=torch.bfloat16, stride=(128 * 196, 1, 14 * 128, 128))
    assert ratio(nchw) == pytest.approx(3.0, rel=1e-6) and ratio(channels_last) == pytest.approx(1.0, rel=1e-6)


def test_keyed_curve_prices_conv1d_and_an_older_curve_leaves_it_on_the_gemm_curve():
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    model = torch.nn.Conv1d(128, 128, 3, padding=1, bias=False, dtype=torch.bfloat16)
    inputs = (torch.randn(8, 128, 1024, dtype=torch.bfloat16),)

    def conv_kernel_s():
        (op,) = [o for o in analyze(model, inputs, profile, device="cuda", batch_sweep=False).ops if o.category == "conv"]
        return op.kernel_s

    profile.gpu.measurements.conv = []
    gemm_only = conv_kernel_s()
    profile.gpu.measurements.conv = [_keyed_curve(dev).model_copy(update={"keyed": False})]
    assert conv_kernel_s() == gemm_only
    profile.gpu.measurements.conv = [_keyed_curve(dev)]
    assert conv_kernel_s() == pytest.approx(1.5 * gemm_only, rel=0.02)


def test_measure_conv_on_the_cpu_times_every_kind():
    shapes = [ConvShape(1, 8, 8, 32, 3, 1, 1, dims=1), ConvShape(1, 3, 8, 16, 4, 4, 0),
              ConvShape(1, 8, 4, 8, 2, 2, 0, transposed=True), ConvShape(1, 4, 8, 6, 3, 1, 1, dims=3)]
    curve = measure_conv("float32", shapes, "cpu", budget_s=0.005, warnings=[], keyed=True)
    assert curve.keyed and [(p.dims, p.transposed) for p in curve.points] == [(1, False), (2, False), (2, True), (3, False)]


def test_half_precision_1x1_convolutions_key_on_their_output_channel_tiles():
    """Over planes of at most 16x16, cuDNN runs a half-precision NCHW 1x1 convolution of stride 1
    whose output channels are not a multiple of 64 on another kernel than its neighbours (its
    legacy SIMT implicit_convolve_sgemm at 14x14 and 16x16); every other convolution has no such key."""
    from roofline.model.curves import conv_out_aligned

    assert not conv_out_aligned("2d", 1, False, 672, 14 * 14, 2) and conv_out_aligned("2d", 1, False, 640, 14 * 14, 2)
    assert not conv_out_aligned("2d", 1, False, 720, 16 * 16, 2) and conv_out_aligned("2d", 1, False, 768, 16 * 16, 2)
    assert conv_out_aligned("2d", 1, False, 672, 28 * 28, 2), "28x28 and larger planes: cuBLAS runs them"
    assert conv_out_aligned("2d", 1, False, 672, 14 * 14, 4), "float32: no key"
    assert conv_out_aligned("2d", 1, False, 672, 14 * 14, 2, channels_last=True), "channels-last: no key"
    assert conv_out_aligned("2d", 9, False, 672, 14 * 14, 2) and conv_out_aligned("2d", 1, True, 672, 14 * 14, 2)


def _conv1x1_us(profile, cin: int, cout: int, side: int, stride: int = 1, dtype=torch.float16, channels_last: bool = False) -> float:
    """The profile's kernel time of a 1x1 convolution of 32 images, us, as ``roofline advise`` prices it."""
    with torch.device("meta"):
        conv = torch.nn.Conv2d(cin, cout, 1, stride, bias=False, dtype=dtype)
        x = torch.randn(32, cin, side, side, dtype=dtype)
    if channels_last:
        conv, x = conv.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    (op,) = [o for o in analyze(conv, (x,), profile, device="cuda", batch_sweep=False).ops if o.category == "conv"]
    return op.kernel_s * 1e6


def _recorded_1x1(part: str) -> list[dict]:
    """A part of the recorded H100 1x1 convolutions (tests/fixtures/h100_conv1x1_kernels.json)."""
    import json

    return json.loads((Path(__file__).parent / "fixtures" / "h100_conv1x1_kernels.json").read_text())[part]


def _legacy_errors(profile) -> list[float]:
    """Relative errors of the profile's kernel time on the recorded H100 legacy-kernel 1x1
    convolutions that are not calibration points."""
    from calibrate.conv import GPU_HALF_SHAPES, GPU_SHAPES, channel_shapes

    calibrated = {(s.batch, s.in_channels, s.out_channels, s.size) for s in GPU_SHAPES + GPU_HALF_SHAPES + channel_shapes()
                  if s.kernel == 1 and s.stride == 1}
    return [_conv1x1_us(profile, r["cin"], r["cout"], r["side"]) / r["kernels_us"] - 1 for r in _recorded_1x1("rows")
            if r["legacy"] and (32, r["cin"], r["cout"], r["side"]) not in calibrated]


def test_the_shipped_h100_profile_prices_held_out_legacy_kernel_convolutions(monkeypatch):
    """Ten held-out 1x1 convolutions cuDNN ran on its legacy kernel on the H100: within 25% in the
    median with the output-channel key, about half their time without it (priced as the GEMMs their
    aligned neighbours run)."""
    import statistics

    import roofline.model.curves as curves
    import roofline.model.kernels as kernels

    shipped = Path(__file__).parent.parent / "device_profiles" / "nvidia-h100-80gb-hbm3.json"
    keyed = _legacy_errors(load_profile_file(shipped))
    assert len(keyed) >= 8
    assert statistics.median(abs(e) for e in keyed) < 0.25
    for module in (curves, kernels):
        monkeypatch.setattr(module, "conv_out_aligned", lambda *a, **k: True)
    unkeyed = _legacy_errors(load_profile_file(shipped))
    assert statistics.median(abs(e) for e in unkeyed) > 0.4


def test_a_1x1_convolution_over_a_large_plane_of_unaligned_bytes_has_a_narrow_plane():
    """The plane is the rows of an NCHW 1x1's GEMM: over more than 16x16 positions, a plane whose
    bytes are not a multiple of 16 runs narrower GEMM kernels, in either dtype; smaller planes keep
    their own keys, and other filters, strides and channels-last layouts have no plane rows."""
    assert conv_narrow_plane("2d", 1, False, 35 * 35, 4) and conv_narrow_plane("2d", 1, False, 35 * 35, 2)
    assert not conv_narrow_plane("2d", 1, False, 36 * 36, 2) and not conv_narrow_plane("2d", 1, False, 56 * 56, 4)
    assert conv_narrow_plane("2d", 1, False, 18 * 18, 2) and not conv_narrow_plane("2d", 1, False, 18 * 18, 4), "1296 bytes a float32 row"
    assert not conv_narrow_plane("2d", 1, False, 14 * 14, 2), "a small plane: cuDNN's own kernels, keyed on plane_aligned"
    assert not conv_narrow_plane("2d", 9, False, 35 * 35, 4) and not conv_narrow_plane("2d", 1, True, 35 * 35, 4)
    assert not conv_narrow_plane("2d", 1, False, 35 * 35, 4, channels_last=True) and not conv_narrow_plane("1d", 1, False, 35 * 35, 4)


def _planes_record() -> list[dict]:
    """The recorded H100 1x1 convolutions over narrow planes and their aligned neighbours
    (``benchmarks/results/h100_conv1x1_planes.json``), each with its torch dtype."""
    import json

    rows = json.loads((Path(__file__).parent.parent / "benchmarks" / "results" / "h100_conv1x1_planes.json").read_text())["rows"]
    return [dict(r, torch_dtype=getattr(torch, r["dtype"])) for r in rows]


def _narrow(r: dict) -> bool:
    return conv_narrow_plane("2d", 1, False, r["side"] ** 2, r["torch_dtype"].itemsize)


def _narrow_plane_errors(profile, rows: list[dict]) -> list[float]:
    """Relative errors of the profile's kernel time on the recorded narrow planes that are not calibration points."""
    from calibrate.conv import GPU_NARROW_PLANE_SHAPES

    calibrated = {(s.in_channels, s.out_channels, s.size) for s in GPU_NARROW_PLANE_SHAPES}
    return [_conv1x1_us(profile, r["cin"], r["cout"], r["side"], dtype=r["torch_dtype"]) / r["kernels_us"] - 1 for r in rows
            if _narrow(r) and (r["cin"], r["cout"], r["side"]) not in calibrated]


def test_narrow_plane_convolutions_price_on_their_own_points_against_the_h100():
    """Inception's, SqueezeNet's and other 1x1 convolutions over narrow planes, timed on the H100 but not
    calibrated: within 25% in the median on the shipped profile's narrow-plane points; priced from
    the other points (the profile without them) they come out under."""
    import statistics

    rows = _planes_record()
    shipped = load_profile_file(Path(__file__).parent.parent / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    keyed = _narrow_plane_errors(shipped, rows)
    assert len(keyed) >= 16
    assert statistics.median(abs(e) for e in keyed) < 0.25
    bare = shipped.model_copy(deep=True)
    for curve in bare.gpu.measurements.conv:
        itemsize = getattr(torch, curve.dtype).itemsize
        curve.points = [p for p in curve.points if not (p.kernel == 1 and not p.strided and p.layout == "nchw" and p.dims == 2
                                                        and conv_narrow_plane("2d", 1, False, p.out_positions, itemsize))]
    assert statistics.median(_narrow_plane_errors(bare, rows)) < -0.15
    # and the narrow points price nothing else: the record's aligned planes take the same price without them
    aligned = [r for r in rows if not _narrow(r)]
    assert len(aligned) >= 16
    for r in aligned:
        assert _conv1x1_us(shipped, r["cin"], r["cout"], r["side"], dtype=r["torch_dtype"]) == pytest.approx(
            _conv1x1_us(bare, r["cin"], r["cout"], r["side"], dtype=r["torch_dtype"]), rel=1e-9)


def _channels_last_strided_errors(profile) -> list[float]:
    """Relative errors of the profile's kernel time on the recorded H100 channels-last strided 1x1
    convolutions."""
    return [_conv1x1_us(profile, r["cin"], r["cout"], r["side"], r["stride"], getattr(torch, r["dtype"]), channels_last=True) / r["kernels_us"] - 1
            for r in _recorded_1x1("channels_last_strided")]


def test_strided_channels_last_convolutions_price_on_their_own_points(monkeypatch):
    """cuDNN runs a strided channels-last convolution on its NHWC kernel alone, where the NCHW twin
    pays layout transforms around it (92 us against 20 us for a 256 -> 512 stride-2 1x1 over 56x56
    in float16 on the H100): priced on the NCHW points they read 2.5-5.7x their time; on the
    channels-last points within 60% each."""
    import roofline.model.kernels as kernels

    shipped = load_profile_file(Path(__file__).parent.parent / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    keyed = _channels_last_strided_errors(shipped)
    assert len(keyed) >= 6 and max(abs(e) for e in keyed) < 0.6
    monkeypatch.setattr(kernels, "_channels_last", lambda x: False)
    assert sorted(_channels_last_strided_errors(shipped))[len(keyed) // 2] > 1.0


def test_output_channel_key_narrows_before_the_inputs_alignment():
    """The legacy kernel runs whatever the input channels: RexNet's 117 -> 702 over 14x14 (input
    channels not a multiple of 8) prices from the legacy points, not from the misaligned-input ones."""
    from roofline.model.curves import conv_out_aligned, conv_plane_aligned

    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    shapes = {ConvShape(32, 112, 672, 14, 1, 1, 0): 5.0, ConvShape(32, 112, 640, 14, 1, 1, 0): 1.0, ConvShape(32, 99, 256, 14, 1, 1, 0): 2.0}
    curve = ConvCurve(dtype="bfloat16", tf32=False, keyed=True, points=[_keyed_point(s, r * _roofline_s(dev, "bfloat16", s)[0]) for s, r in shapes.items()])
    model = ConvModel(curve, dev.matmul_model("bfloat16"))
    key = ConvKey("2d", 1, False, conv_aligned(117, 2), conv_plane_aligned("2d", 1, False, 196, 2), conv_out_aligned("2d", 1, False, 702, 196, 2))
    assert not key.aligned and not key.out_aligned
    assert model.ratio(32 * 196, 702, 117, 1, key) == pytest.approx(5.0, rel=1e-6)
    aligned_out = ConvKey("2d", 1, False, False, False, True)
    assert model.ratio(32 * 196, 256, 117, 1, aligned_out) == pytest.approx(2.0, rel=1e-6)


def test_channels_last_points_serve_strided_channels_last_convolutions_of_their_own_filter():
    """Channels-last points price only strided 2-d channels-last convolutions, after the filter and
    the stride narrowed: a stride-1 channels-last convolution and a channels-last stem whose filter
    has no channels-last points take the NCHW points; a curve without channels-last points prices a
    strided channels-last one on its NCHW twin."""
    from roofline.model.curves import conv_channels_last_key

    assert conv_channels_last_key("2d", True, True) and not conv_channels_last_key("2d", False, True)
    assert not conv_channels_last_key("3d", True, True) and not conv_channels_last_key("2d", True, False)
    dev = DeviceModel(load_profile_file(FIXTURE).gpu, "cuda")
    nchw = {ConvShape(32, 256, 512, 56, 1, 2, 0): 4.0, ConvShape(32, 64, 64, 56, 3, 1, 1): 2.0, ConvShape(32, 3, 32, 224, 3, 2, 1): 3.0}
    last = {ConvShape(32, 256, 512, 56, 1, 2, 0, layout="channels_last"): 1.0, ConvShape(32, 64, 64, 56, 3, 1, 1, layout="channels_last"): 0.5,
            ConvShape(8, 3, 64, 224, 7, 2, 3, layout="channels_last"): 7.0}

    def model(shapes):
        curve = ConvCurve(dtype="bfloat16", tf32=False, keyed=True, points=[_keyed_point(s, r * _roofline_s(dev, "bfloat16", s)[0]) for s, r in shapes.items()])
        return ConvModel(curve, dev.matmul_model("bfloat16"))

    both = model({**nchw, **last})
    strided_1x1 = (32 * 28 * 28, 512, 256, 1)
    assert both.ratio(*strided_1x1, ConvKey("2d", 1, True, True, channels_last=True)) == pytest.approx(1.0, rel=1e-6)
    assert both.ratio(*strided_1x1, ConvKey("2d", 1, True, True)) == pytest.approx(4.0, rel=1e-6)
    # stride 1 is keyed NCHW (conv_channels_last_key), whatever the layout: the 3x3 NCHW point
    assert both.ratio(32 * 56 * 56, 64, 576, 9, ConvKey("2d", 9, False, True, channels_last=conv_channels_last_key("2d", False, True))) == pytest.approx(2.0, rel=1e-6)
    # a 3-channel 3x3 stride-2 stem in channels-last: its NCHW twin, not the channels-last 7x7 stem
    assert both.ratio(32 * 112 * 112, 32, 27, 9, ConvKey("2d", 9, True, False, channels_last=True)) == pytest.approx(3.0, rel=1e-6)
    assert model(nchw).ratio(*strided_1x1, ConvKey("2d", 1, True, True, channels_last=True)) == pytest.approx(4.0, rel=1e-6)
    with pytest.raises(ValidationError):
        _keyed_point(ConvShape(4, 32, 64, 28, 3, 1, 1, dims=3, layout="channels_last"), 1e-4)


def test_a_3d_point_with_its_own_depth_filter_and_stride_runs_as_torch_runs_it():
    """A clip of 16 frames under a 1x3x3 filter of spatial stride 2 (an MC3 / R(2+1)D block): the
    point's shapes, taps, positions and FLOPs are torch's and the op formula's; the depth fields are
    written only where set, and belong to 3-d points alone."""
    from calibrate.conv import shape_3d

    s = shape_3d(2, 8, 16, 6, 10, (1, 3, 3), (1, 2, 2), (0, 1, 1))
    assert (s.depth, s.kernel_depth, s.stride_depth, s.padding_depth) == (6, 1, 1, 0)
    p = ConvPoint.model_construct(**s._asdict())
    x, w, out = p.shapes()
    real = torch.nn.functional.conv3d(torch.zeros(x), torch.zeros(w), None, p.strides, p.paddings)
    assert tuple(real.shape) == out == (2, 16, 6, 5, 5)
    assert p.taps == 9 and p.strided and p.out_positions == 6 * 5 * 5
    assert p.flops == conv_flops(x, w, out, False)
    point = ConvPoint(**s._asdict(), time=Stat(median_s=1e-5, iqr_s=0.0, samples=5), flop_per_s=p.flops / 1e-5)
    assert ConvPoint.model_validate_json(point.model_dump_json()) == point
    cube = _point(1, 8, 8, 14, 3, 1, 1, 1e-5)
    assert "depth" not in cube.model_dump() and "kernel_depth" not in cube.model_dump()
    with pytest.raises(ValidationError, match="3-d"):
        ConvPoint(**{**cube.model_dump(), "depth": 4})


def test_a_filter_of_several_taps_never_prices_on_1x1_points():
    """A 1x1 filter is a plain GEMM; a 3x1x1 (temporal) one runs cuDNN's implicit GEMM like every
    filter of several taps, so it takes the multi-tap points (27 taps here), not the 1x1x1 ones its
    taps are nearer to in log."""
    from roofline.model.curves import _keyed_rows

    rows = [(ConvKey("3d", 1, False, True), "1x1x1"), (ConvKey("3d", 27, False, True), "3x3x3")]
    assert [v for _, v in _keyed_rows(rows, ConvKey("3d", 3, False, True))] == ["3x3x3"]
    assert [v for _, v in _keyed_rows(rows, ConvKey("3d", 1, False, True))] == ["1x1x1"]


def test_the_shipped_h100_profile_prices_held_out_video_layers():
    """The layers of torchvision's video models (R3D-18, MC3-18, R(2+1)D-18, S3D, patch embeddings),
    recorded on the H100 (benchmarks/results/h100_conv3d.json) and held out of calibration: within
    30% in the median on the shipped profile's 3-d points. On the 2-d points of their taps alone
    the 3x3x3 and the temporal 3x1x1 filters of stride 1 are off by 57% and 29% in the median
    (29% and 17% on the 3-d points)."""
    import statistics

    from benchmarks.conv3d_check import filter_name, predicted_s
    from benchmarks.sweep_checks import sweep_points

    shipped = load_profile_file(Path(__file__).parent.parent / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    layers = [p for p in sweep_points(Path(__file__).parent.parent / "benchmarks" / "results" / "h100_conv3d.json", "conv3d") if p["role"] == "layer"]
    assert len(layers) > 200

    def median_error(profile, points) -> float:
        dev = DeviceModel(profile.gpu, "cuda")
        return statistics.median(abs(predicted_s(dev, p) / p["median_s"] - 1) for p in points)

    cubes = [p for p in layers if filter_name(p) == "3x3x3 s1"]
    temporal = [p for p in layers if filter_name(p) == "3x1x1 s1"]
    assert median_error(shipped, layers) < 0.30
    with_3d = median_error(shipped, cubes), median_error(shipped, temporal)
    assert with_3d[0] < 0.35 and with_3d[1] < 0.25
    for curve in shipped.gpu.measurements.conv:
        curve.points = [q for q in curve.points if q.dims != 3]
    assert median_error(shipped, cubes) > max(0.45, with_3d[0] + 0.2) and median_error(shipped, temporal) > with_3d[1] + 0.1
