"""Kernels priced by mechanism, against points recorded on the H100 (tests/fixtures/h100_mechanisms.json:
benchmarks/mechanism_sweep.py's points; the curves hold a calibration-like subset, the checks are
points held out of them): depthwise and grouped convolutions on their families, stride, GEMMs whose
rows break the 16-byte alignment, and addmm's bias epilogue."""

import functools
import json
import statistics

import pytest
import torch
import torch.nn.functional as F

from benchmarks.bmm_check import aligned_rows
from benchmarks.bmm_check import predicted_s as bmm_predicted_s
from benchmarks.odd_convs import predicted_s as odd_predicted_s
from benchmarks.row_kernels import predicted_s as row_predicted_s
from benchmarks.sweep_checks import sweep_points
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from roofline.schema.profile import ConvFamilyCurve, GemmRatioCurve
from tests.conftest import REPO, shipped_h100

FIXTURES = REPO / "tests" / "fixtures"
DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@pytest.fixture(scope="module")
def recorded():
    return json.loads((FIXTURES / "h100_mechanisms.json").read_text())


def profile(recorded, families: bool = True):
    p = load_profile_file(FIXTURES / "h100_profile.json")
    if families:
        p.gpu.measurements.conv_families = [ConvFamilyCurve(**c) for c in recorded["conv_families"]]
        p.gpu.measurements.gemm_ratios = [GemmRatioCurve(**c) for c in recorded["gemm_ratios"]]
    return p


def kernel_s(fn, args, prof) -> float:
    """The predicted device time of the one op that launches kernels in ``fn(*args)``."""
    with torch.device("meta"):
        meta = [torch.empty_like(a, device="meta") if isinstance(a, torch.Tensor) else a for a in args]
    a = Analysis.of(fn, tuple(meta), None, prof, Options(device="cuda", batch_sweep=False, capture_device="cpu"))
    return sum(k[0] for k in a.kernels())


def conv_case(p):
    x = torch.empty(p["batch"], p["cin"], p["size"], p["size"], dtype=DT[p["dtype"]])
    w = torch.empty(p["cout"], p["cin"] // p["groups"], p["kernel"], p["kernel"], dtype=DT[p["dtype"]])
    s, pad, g = p["stride"], p["padding"], p["groups"]
    return (lambda x, w: F.conv2d(x, w, None, s, pad, 1, g)), (x, w)


def relative_errors(recorded, family, prof, strided: bool | None = None):
    errs = []
    for p in recorded["checks"]:
        if p["family"] == family and (strided is None or (p["stride"] > 1) == strided):
            fn, args = conv_case(p)
            errs.append((kernel_s(fn, args, prof) - p["median_s"]) / p["median_s"])
    return errs


def test_depthwise_convolutions_are_priced_on_their_family(recorded):
    with_family = relative_errors(recorded, "conv_depthwise", profile(recorded))
    on_gemm_curve = relative_errors(recorded, "conv_depthwise", profile(recorded, families=False))
    assert len(with_family) >= 10
    # affine in work between the launch-bound and the throughput-bound points (log-log
    # interpolation between them overprices the convolutions in between: 10.8% here)
    assert statistics.median(map(abs, with_family)) < 0.08
    assert statistics.median(on_gemm_curve) > 5.0  # the dense GEMM curve prices them as compute-bound


def test_a_depthwise_convolution_with_more_outputs_than_inputs_is_depthwise(recorded):
    # ATen's is_depthwise: groups = in channels and any multiple of them out (PiT's pooling doubles
    # them). Its own float32 NCHW kernel runs m outputs per input at about m times the time, so the
    # depthwise family at the op's work prices it (benchmarks/odd_convs.py, the lent H100); as a
    # grouped convolution of width 1 it came out 58-70% under.
    prof = profile(recorded)
    points = [p for p in json.loads((REPO / "benchmarks" / "results" / "h100_odd_convs.json").read_text())["points"]
              if p["kind"] == "multiplier" and p["dtype"] == "float32" and p["multiplier"] > 1]
    assert len(points) == 4
    errors = [odd_predicted_s(prof, p) / p["median_s"] - 1 for p in points]
    assert max(map(abs, errors)) < 0.2, errors


def test_which_gpu_depthwise_convolution_runs_cudnn_follows_atens_choice_on_the_h100():
    # ATen's backend for depthwise convolutions (benchmarks/depthwise_backends.py on the lent H100,
    # torch 2.11): cuDNN for channels-last, ATen's own kernel for float32 and bfloat16 NCHW, and for
    # float16 NCHW cuDNN only at 32 channels or more and a workload its rule admits. Every 14th of
    # the 4,480 recorded cases (the rule reads a capture made here) and every timed point.
    from benchmarks.depthwise_backends import rule_says_cudnn

    record = json.loads((REPO / "benchmarks" / "results" / "h100_depthwise_backends.json").read_text())
    cases = record["cases"][::7] + record["points"]
    assert len(record["cases"]) == 4480 and {c["backend"] for c in cases} == {"Cudnn", "CudaDepthwise2d"}
    wrong = [c for c in cases if rule_says_cudnn(c) != (c["backend"] == "Cudnn")]
    assert not wrong, wrong[:5]


def test_a_float16_depthwise_convolution_on_atens_own_kernel_is_priced_as_bfloat16s():
    # ATen's own kernel runs float16 and bfloat16 alike (within 2% at 32 timed shapes, the lent
    # H100), 2.5-3x slower than cuDNN's depthwise kernel at 3x3: a float16 one that ATen keeps
    # (fewer than 32 channels, a 7x7, most strided batches) is priced on the bfloat16 curve.
    from benchmarks.depthwise_backends import _call, _operands

    prof = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    points = [p for p in json.loads((REPO / "benchmarks" / "results" / "h100_depthwise_backends.json").read_text())["points"]
              if p["dtype"] == "float16" and p["backend"] == "CudaDepthwise2d" and p["filter"] == 3 and p["stride"] == 1]
    assert len(points) == 4  # 8, 16 and 24 channels at 112^2, 16 at 128^2
    errors = [kernel_s(lambda x, w, p=p: _call(p, x, w)(), _operands(p, "cpu"), prof) / p["median_s"] - 1 for p in points]
    assert max(map(abs, errors)) < 0.1, errors


def test_grouped_convolutions_at_other_group_counts(recorded):
    # the curves hold 32 groups; the checks are RegNet-like widths at other group counts
    errs = relative_errors(recorded, "conv_grouped", profile(recorded))
    assert len(errs) >= 6 and statistics.median(map(abs, errs)) < 0.12  # log-log in work: 21%


def test_strided_convolutions_pay_the_stride_ratio_of_their_family(recorded):
    # held-out stride-2 depthwise and grouped convolutions at other sizes and widths: the stride-1
    # curve times the ratio the calibrated stride-2 points show (on the stride-1 curve alone: 28%)
    prof = profile(recorded)
    errs = relative_errors(recorded, "conv_depthwise", prof, strided=True) + relative_errors(recorded, "conv_grouped", prof, strided=True)
    assert len(errs) >= 6 and statistics.median(map(abs, errs)) < 0.15


def test_stride_two_against_stride_one_as_measured(recorded):
    # the H100: 144 channels at 56x56, fp16, batch 32: 51.1 us at stride 1, 40.2 us at stride 2
    # (a quarter of the outputs, the same input read)
    prof = profile(recorded)
    base = dict(family="conv_depthwise", dtype="float16", batch=32, cin=144, cout=144, groups=144, size=56, kernel=3, padding=1)
    s1, s2 = conv_case({**base, "stride": 1}), conv_case({**base, "stride": 2})
    assert kernel_s(*s2, prof) / kernel_s(*s1, prof) == pytest.approx(40.2 / 51.1, rel=0.2)


def test_misaligned_vocabulary_gemm_pays_its_penalty(recorded):
    prof = profile(recorded)
    measured = {(p["k"], p["n"]): p["median_s"] for p in recorded["checks"] if p["family"] == "gemm_alignment"}
    x = torch.empty(2048, 768, dtype=torch.float16)
    odd = kernel_s(F.linear, (x, torch.empty(50257, 768, dtype=torch.float16)), prof)
    even = kernel_s(F.linear, (x, torch.empty(50304, 768, dtype=torch.float16)), prof)
    assert odd > 4 * even  # measured: 8.1x
    assert abs(odd - measured[(768, 50257)]) / measured[(768, 50257)] < 0.4
    plain = kernel_s(F.linear, (x, torch.empty(50257, 768, dtype=torch.float16)), profile(recorded, families=False))
    assert plain < 1.2 * even  # without the calibrated penalty the curve cannot tell


def test_float32_addmm_epilogue(recorded):
    prof = profile(recorded)
    measured = {(p["m"], p["n"], p["variant"]): p["median_s"] for p in recorded["checks"] if p["family"] == "addmm"}
    x, w, b = torch.empty(32, 768), torch.empty(3072, 768), torch.empty(3072)
    with_bias, without = kernel_s(F.linear, (x, w, b), prof), kernel_s(F.linear, (x, w), prof)
    assert with_bias / without == pytest.approx(measured[(32, 3072, "addmm")] / measured[(32, 3072, "mm")], rel=0.15)


# ---- addmm's epilogue over rows, reduction length and width (tests/fixtures/h100_addmm_grid.json) ----


def _grid_curve(points, dtype: str, keep):
    """An addmm ratio curve from the recorded points whose (m, k, n) ``keep`` accepts."""
    from roofline.schema.profile import GemmRatioPoint, Stat

    by = {(p["m"], p["k"], p["n"], p["variant"]): p for p in points if p["dtype"] == dtype}
    stat = lambda p: Stat(median_s=p["median_s"], iqr_s=p["iqr_s"], samples=p["samples"])  # noqa: E731
    shapes = sorted({(m, k, n) for m, k, n, _ in by if keep(m, k, n)})
    return GemmRatioCurve(kind="addmm", dtype=dtype, points=[
        GemmRatioPoint(m=m, n=n, k=k, time=stat(by[(m, k, n, "addmm")]), reference=stat(by[(m, k, n, "mm")])) for m, k, n in shapes
    ]), by


def test_float32_addmm_ratio_on_its_grid_predicts_held_out_shapes():
    from calibrate.mechanisms import ADDMM_GRID
    from roofline.model.families import GemmRatioModel

    points = json.loads((FIXTURES / "h100_addmm_grid.json").read_text())["points"]
    on_grid = lambda m, k, n: m in ADDMM_GRID["m"] and k in ADDMM_GRID["k"] and n in ADDMM_GRID["n"]  # noqa: E731
    curve, by = _grid_curve(points, "float32", on_grid)
    assert len(curve.points) >= 40
    grid = GemmRatioModel([curve])
    assert "float32" in grid.addmm_grid
    # the eight scattered shapes calibration timed before (tests/fixtures/h100_mechanisms.json)
    recorded = json.loads((FIXTURES / "h100_mechanisms.json").read_text())
    few = GemmRatioModel([GemmRatioCurve(**c) for c in recorded["gemm_ratios"] if c["kind"] == "addmm" and c["dtype"] == "float32"])
    assert not few.addmm_grid
    held = [(m, k, n) for m, k, n, v in by if v == "mm" and not on_grid(m, k, n) and m != 8]
    errors = {}
    for name, model in (("grid", grid), ("few", few)):
        errors[name] = statistics.median(
            abs(model.addmm_ratio("float32", m, n, k) / (by[(m, k, n, "addmm")]["median_s"] / by[(m, k, n, "mm")]["median_s"]) - 1)
            for m, k, n in held
        )
    assert errors["grid"] < 0.10 and errors["grid"] < 0.6 * errors["few"], errors
    # the mechanism: at 64-128 rows the epilogue kernel runs ~2x mm from k = 1024 on, not at k = 256
    assert grid.addmm_ratio("float32", 128, 1000, 4096) > 1.7 and grid.addmm_ratio("float32", 128, 1000, 256) < 1.2


def test_grid_interpolation_is_multilinear_in_logs_and_held_at_the_edges():
    import math

    from roofline.model.families import _as_grid, _grid_value

    import numpy as np

    rows = np.array([(math.log(m), math.log(n), math.log(k), float(v)) for m, n, k, v in [
        (1, 1, 1, 0.0), (1, 1, 4, 1.0), (1, 4, 1, 0.0), (1, 4, 4, 1.0), (4, 1, 1, 2.0), (4, 1, 4, 3.0), (4, 4, 1, 2.0), (4, 4, 4, 3.0),
    ]])
    axes, values = _as_grid(rows)
    assert _grid_value(axes, values, np.log([2, 2, 2])) == pytest.approx(1.5)  # halfway in log on every axis
    assert _grid_value(axes, values, np.log([4, 1, 1])) == pytest.approx(2.0)
    assert _grid_value(axes, values, np.log([100, 1, 100])) == pytest.approx(3.0)  # held at the edge
    assert _as_grid(rows[:-1]) is None  # a missing corner is not a grid


def test_an_implausible_addmm_pair_is_measured_again():
    from calibrate.mechanisms import ADDMM_RETRIES, addmm_pair
    from roofline.schema.profile import Stat

    def timings(*seconds):
        it = iter(seconds)
        return lambda fn, device, budget_s, label, warnings: Stat(median_s=next(it), iqr_s=0.0, samples=5)

    warnings: list[str] = []
    # a stalled addmm sample (51x mm), then a plausible pair: the second is kept, without a warning
    mm, addmm = addmm_pair(None, None, "cuda", 0.01, "float32 1x3072x1024", warnings, stat=timings(5e-6, 255e-6, 5e-6, 6e-6))
    assert (mm.median_s, addmm.median_s) == (5e-6, 6e-6) and warnings == []
    # never plausible: the pair nearest 1 is kept, and said
    tries = [5e-6, 255e-6, 5e-6, 40e-6, 5e-6, 90e-6][: 2 * (1 + ADDMM_RETRIES)]
    mm, addmm = addmm_pair(None, None, "cuda", 0.01, "float32 1x3072x1024", warnings, stat=timings(*tries))
    assert addmm.median_s == 40e-6 and len(warnings) == 1 and "outside" in warnings[0]


def test_a_gemv_streams_within_the_cache_and_reads_beyond_it():
    """The read curve is torch.sum to one value (its own passes within the cache); a GEMV's bytes move
    as a copy's within the cache and at the read curve's DRAM rate beyond it; a reduction always reads."""
    from roofline.model.device import DeviceModel
    from roofline.model.kernels import _memory_s

    prof = load_profile_file(FIXTURES / "h100_profile.json")
    dev = DeviceModel(prof.gpu, "cuda")
    cache = dev.cache_bytes

    def gemv(k: int, n: int):
        with torch.device("meta"):
            x, w = torch.empty(1, k), torch.empty(n, k)
        a = Analysis.of(F.linear, (x, w), None, prof, Options(device="cuda", batch_sweep=False, capture_device="cpu"))
        (i,) = [j for j, c in enumerate(a.costs) if c.kernels]
        return a.graph.ops[i], a.costs[i]

    op, cost = gemv(768, 1000)  # a 3 MB weight, inside the 50 MB L2
    nbytes = cost.bytes_read + cost.bytes_written
    assert nbytes < cache
    assert _memory_s(op, cost, dev) == pytest.approx(nbytes / dev.bandwidth.bytes_per_s(nbytes, "copy"))
    assert _memory_s(op, cost, dev) < 0.5 * nbytes / dev.bandwidth.bytes_per_s(nbytes, "read")
    op, cost = gemv(4096, 4096)  # 64 MiB, beyond it
    nbytes = cost.bytes_read + cost.bytes_written
    assert nbytes > cache and _memory_s(op, cost, dev) == pytest.approx(nbytes / dev.bandwidth.bytes_per_s(nbytes, "read"))
    with torch.device("meta"):
        x = torch.empty(1 << 20)
    a = Analysis.of(torch.sum, (x,), None, prof, Options(device="cuda", batch_sweep=False, capture_device="cpu"))
    (i,) = [j for j, c in enumerate(a.costs) if c.kernels]
    op, cost = a.graph.ops[i], a.costs[i]
    nbytes = cost.bytes_read + cost.bytes_written
    assert cost.category == "reduction" and nbytes < cache
    assert _memory_s(op, cost, dev) == pytest.approx(nbytes / dev.bandwidth.bytes_per_s(nbytes, "read"))


def test_addmm_ratio_reads_its_grid_multilinearly():
    import math

    from roofline.model.families import GemmRatioModel
    from roofline.schema.profile import GemmRatioPoint, Stat

    ref = Stat(median_s=1e-5, iqr_s=0.0, samples=5)
    ratios = {(m, n, k): 1.0 + (m == 256) + 0.5 * (k == 4096) for m in (16, 256) for n in (768, 3072) for k in (256, 4096)}
    curve = GemmRatioCurve(kind="addmm", dtype="float32", points=[
        GemmRatioPoint(m=m, n=n, k=k, time=Stat(median_s=r * 1e-5, iqr_s=0.0, samples=5), reference=ref) for (m, n, k), r in ratios.items()
    ])
    model = GemmRatioModel([curve])
    # at the centre in logs: the geometric mean of the eight corners (the two nearest would be two of them)
    centre = model.addmm_ratio("float32", 64, 1536, 1024)
    assert centre == pytest.approx(math.exp(sum(math.log(r) for r in ratios.values()) / 8))
    assert model.addmm_ratio("float32", 100000, 768, 256) == pytest.approx(2.0)  # held at the edge


# ---- depthwise gradients: their own families ---------------------------------------------------------


@pytest.fixture(scope="module")
def gradients():
    return json.loads((FIXTURES / "h100_depthwise_gradients.json").read_text())


def gradient_errors(gradients, variant: str, with_gradient_curves: bool) -> list[float]:
    """Relative errors of depthwise ``variant`` points (input_grad, weight_grad) of the sweep, priced
    through ``convolution_backward``'s cost as the sweep's check prices them, with the fixture's
    families (their gradient curves dropped when ``with_gradient_curves`` is False: the forward's
    stand in)."""
    from benchmarks.conv_backward_check import predicted_s
    from roofline.model.device import DeviceModel

    p = load_profile_file(FIXTURES / "h100_profile.json")
    p.gpu.measurements.conv_families = [ConvFamilyCurve(**c) for c in gradients["conv_families"]
                                        if with_gradient_curves or c.get("gradient", "none") == "none"]
    dev = DeviceModel(p.gpu, "cuda")
    return [predicted_s(dev, q) / q["median_s"] - 1 for q in gradients["checks"] if q["variant"] == variant]


@pytest.mark.parametrize("variant", ["input_grad", "weight_grad"])
def test_depthwise_gradients_are_priced_on_their_own_families(gradients, variant):
    """cuDNN's depthwise gradient kernels run slower than the forward (strided input gradients
    several times): priced as the forward they are under; on their calibrated families, at sweep
    shapes the calibration did not time, within the forward family's error of the forward."""
    own = gradient_errors(gradients, variant, with_gradient_curves=True)
    as_forward = gradient_errors(gradients, variant, with_gradient_curves=False)
    assert len(own) >= 40
    assert statistics.median(as_forward) < -0.25, "the forward's family prices the gradient low"
    assert statistics.median(map(abs, own)) < 0.5 * statistics.median(map(abs, as_forward))


def test_channels_last_depthwise_gradients_take_their_own_curves():
    """ConvNeXt's depthwise 7x7 runs on channels-last tensors (its block permutes back from a
    channels-last LayerNorm), and cuDNN's gradients there are 2-3x the NCHW ones: priced on the
    channels-last gradient curves, its recorded H100 backward within 25%; on the NCHW ones, far under."""
    recorded = json.loads((FIXTURES / "h100_depthwise_channels_last_gradients.json").read_text())

    def profile(channels_last_gradients: bool):
        p = load_profile_file(FIXTURES / "h100_profile.json")
        p.gpu.measurements.conv_families = [
            ConvFamilyCurve(**c) for c in recorded["conv_families"]
            if channels_last_gradients or c["layout"] == "nchw" or c.get("gradient", "none") == "none"
        ]
        return p

    def backward_s(r, p):
        cl = torch.channels_last
        g, x = (torch.empty(r[k]).contiguous(memory_format=cl) for k in ("grad_output", "input"))
        w = torch.empty(r["weight"]).contiguous(memory_format=cl)
        c, k = r["weight"][0], r["weight"][2]
        fn = lambda g, x, w: torch.ops.aten.convolution_backward(g, x, w, [c], [1, 1], [k // 2] * 2, [1, 1], False, [0, 0], c, [True, True, True])  # noqa: E731
        return kernel_s(fn, (g, x, w), p)

    own, nchw = profile(True), profile(False)
    assert len(recorded["ops"]) == 4
    for r in recorded["ops"]:
        assert backward_s(r, own) == pytest.approx(r["measured_s"], rel=0.25)
        assert backward_s(r, nchw) < 0.7 * r["measured_s"]


def test_a_gradient_without_its_own_curve_takes_the_forwards():
    from roofline.model.families import ConvFamilyModel
    from roofline.schema.profile import ConvFamilyPoint, Stat

    def curve(gradient, t):
        pts = [ConvFamilyPoint(batch=b, channels=64, groups=64, size=28, kernel=3, stride=1, time=Stat(median_s=t * b, iqr_s=0.0, samples=5))
               for b in (1, 8)]
        return ConvFamilyCurve(kind="depthwise", dtype="float32", layout="nchw", gradient=gradient, points=pts)

    model = ConvFamilyModel([curve("none", 1e-5), curve("weight", 3e-5)])
    macs = 8 * 64 * 28 * 28 * 9
    forward = model.time_s("depthwise", "float32", "nchw", 3, 1, 1, macs)
    assert model.time_s("depthwise", "float32", "nchw", 3, 1, 1, macs, gradient="weight") == pytest.approx(3 * forward)
    assert model.time_s("depthwise", "float32", "nchw", 3, 1, 1, macs, gradient="input") == pytest.approx(forward)


# ---- cat: every input at least the grid of the largest -----------------------------------------------


def cat_errors(with_grid: bool) -> tuple[list[float], list[float]]:
    """Relative errors of the H100's cat sweep (all points; the DenseNet ones with 12 or more small
    inputs), priced as ``cat_inputs_check.py`` prices them with the fixture profile, with or without
    the recorded ``cat_grid`` curve."""
    from benchmarks.cat_inputs_check import predicted_s
    from roofline.schema.profile import PointwiseCurve

    recorded = json.loads((FIXTURES / "h100_cat_grid.json").read_text())
    p = load_profile_file(FIXTURES / "h100_profile.json")
    p.gpu.measurements.pointwise = [c for c in p.gpu.measurements.pointwise if c.op != "cat_grid"]
    if with_grid:
        p.gpu.measurements.pointwise += [PointwiseCurve(**c) for c in recorded["pointwise"]]
    every = [predicted_s(p, q) / q["median_s"] - 1 for q in recorded["checks"]]
    dense = [e for e, q in zip(every, recorded["checks"]) if len(q["shapes"]) >= 13 and q["dim"] == 1]
    return every, dense


def test_a_cat_of_many_small_inputs_beside_a_large_one_is_priced_by_its_grid():
    """ATen's batched cat sizes one grid per input for the largest: DenseNet's cats of 13-25 inputs
    run 2-3x their bytes' time on the H100. With the calibrated grid, at sweep shapes calibration did
    not time, those land near the measurement and the sweep's median error falls by more than 30%."""
    every, dense = cat_errors(with_grid=True)
    bytes_only, dense_bytes_only = cat_errors(with_grid=False)
    assert len(dense) >= 8
    assert statistics.median(dense_bytes_only) < -0.4, "on its bytes alone such a cat is priced far low"
    assert statistics.median(map(abs, dense)) < 0.25
    assert statistics.median(map(abs, every)) < 0.7 * statistics.median(map(abs, bytes_only))


def test_the_cat_grid_adds_nothing_to_equal_inputs():
    from roofline.pipeline import analyze
    from roofline.schema.profile import PointwiseCurve, PointwisePoint, Stat

    def flat(op, rate):
        pts = [PointwisePoint(elements=n // 4, bytes=n, time=Stat(median_s=n / rate, iqr_s=0.0, samples=5), elements_per_s=n / 4 / (n / rate), bytes_per_s=rate)
               for n in (1 << 10, 1 << 20, 1 << 30)]
        return PointwiseCurve(op=op, dtype="float32", points=pts)

    p = load_profile_file(FIXTURES / "h100_profile.json")
    p.gpu.measurements.pointwise = [c for c in p.gpu.measurements.pointwise if c.op not in ("cat", "cat_grid")] + [flat("cat", 2e12), flat("cat_grid", 4e12)]

    def cat_s(*shapes):
        report = analyze(lambda *xs: torch.cat(xs, 1), tuple(torch.randn(*s) for s in shapes), p, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if o.target.startswith("aten.cat")]
        return op.kernel_s

    big, small = (32, 256, 14, 14), (32, 32, 14, 14)
    big_bytes = 32 * 256 * 14 * 14 * 4
    assert cat_s(big, *[small] * 24) == pytest.approx(2 * big_bytes / 2e12 + 24 * big_bytes / 4e12, rel=0.01)
    assert cat_s(big, big) == pytest.approx(4 * big_bytes / 2e12, rel=0.01)  # equal inputs: their bytes


# ---- batches of small products (benchmarks/results/h100_gemm_sweep.json's bmm points) ----


_shipped_h100 = shipped_h100  # read once (tests/conftest.py)


def _with_shipped_bmm():
    """(the fixture H100 profile, the same with the shipped H100 profile's bmm curves)."""
    without = load_profile_file(FIXTURES / "h100_profile.json")
    assert not any(c.kind == "bmm" for c in without.gpu.measurements.gemm_ratios)
    with_bmm = load_profile_file(FIXTURES / "h100_profile.json")
    with_bmm.gpu.measurements.gemm_ratios += [c for c in _shipped_h100().gpu.measurements.gemm_ratios if c.kind == "bmm"]
    return without, with_bmm


def _bmm_errors(prof, checks) -> dict[tuple[str, bool], list[float]]:
    """Relative errors of torch.bmm priced with ``prof`` as ``benchmarks/bmm_check.py`` prices it, at
    the recorded sweep's points, by (dtype, whether the rows are 16-byte aligned)."""
    out: dict[tuple[str, bool], list[float]] = {}
    for p in checks:
        out.setdefault((p["dtype"], aligned_rows(p)), []).append(bmm_predicted_s(prof, p) / p["median_s"] - 1)
    return out


@pytest.fixture(scope="module")
def bmm_errors():
    checks = sweep_points(REPO / "benchmarks" / "results" / "h100_gemm_sweep.json", "bmm")
    without, with_bmm = _with_shipped_bmm()
    return _bmm_errors(without, checks), _bmm_errors(with_bmm, checks)


def test_misaligned_batched_products_take_their_calibrated_ratio(bmm_errors):
    """Hand-written attention's score and value products (77, 197 and 49 long: misaligned rows) run
    up to 2-4x the tall GEMM of all their rows that the matmul curve prices; the calibrated batches
    (these products at other batch counts; the sweep also transposes the second operand) carry it."""
    without, with_bmm = bmm_errors
    misaligned = lambda errs: [e for (d, al), v in errs.items() if not al for e in v]  # noqa: E731
    assert statistics.median(misaligned(without)) < -0.3, statistics.median(misaligned(without))  # far under on the curve alone
    assert abs(statistics.median(misaligned(with_bmm))) < 0.2, statistics.median(misaligned(with_bmm))
    med = lambda errs: statistics.median(abs(e) for e in errs)  # noqa: E731
    assert med(misaligned(with_bmm)) < 0.6 * med(misaligned(without)), (med(misaligned(with_bmm)), med(misaligned(without)))


def test_aligned_batched_products_read_only_aligned_calibration_shapes(bmm_errors):
    """Products with 16-byte rows (128 long: shapes calibration did not time) run other kernels than
    misaligned ones of a similar size: their misaligned neighbours' ratios would price them 50-65%
    over."""
    _, with_bmm = bmm_errors
    aligned = [e for (d, al), v in with_bmm.items() if al for e in v]
    assert len(aligned) >= 30
    assert statistics.median(abs(e) for e in aligned) < 0.2, sorted(aligned)


def test_only_batched_products_take_the_bmm_ratio():
    """A grouped GEMM (a mixture of experts' layers) runs kernels of its own, not cuBLAS's batched
    ones: its groups take no bmm ratio."""
    without, with_bmm = _with_shipped_bmm()
    x, w = torch.empty(1024, 1408, dtype=torch.bfloat16), torch.empty(8, 1024, 1408, dtype=torch.bfloat16).transpose(1, 2)
    offs = torch.arange(1, 9, dtype=torch.int32) * 128
    grouped = lambda x, w, offs: torch._grouped_mm(x, w, offs=offs)  # noqa: E731
    assert kernel_s(grouped, (x, w, offs), with_bmm) == pytest.approx(kernel_s(grouped, (x, w, offs), without), rel=1e-9)
    a, b = torch.empty(2048, 49, 32, dtype=torch.bfloat16), torch.empty(2048, 32, 49, dtype=torch.bfloat16)
    assert kernel_s(torch.bmm, (a, b), with_bmm) > 1.2 * kernel_s(torch.bmm, (a, b), without)


# ---- row-wise kernels over row length (benchmarks/results/h100_*_rows.json) ----


def _row_errors(record: str) -> dict[tuple[str, int, int], float]:
    """Relative errors of a recorded row-kernel sweep priced with the shipped H100 profile as
    ``benchmarks/row_kernels.py --sweep`` prices it, by (dtype, rows, row length)."""
    recorded = json.loads((REPO / "benchmarks" / "results" / record).read_text())["points"]
    return {(p["dtype"], p["rows"], p["row"]): row_predicted_s(_shipped_h100(), p) / p["median_s"] - 1 for p in recorded}


def test_layer_norm_rows_against_the_h100():
    """Rows of 16-1024 elements at 2^20 and 2^24 elements, three dtypes: rows of 16-48 (SegFormer's
    32, EdgeNeXt's 48) take 1.3-4x a row of 64's time over the same bytes."""
    errors = _row_errors("h100_layer_norm_rows.json")
    short = [e for (_, _, row), e in errors.items() if row < 64]
    assert len(short) == 24 and max(abs(e) for e in short) < 0.12, sorted(short)
    assert statistics.median(abs(e) for e in errors.values()) < 0.06


def test_softmax_rows_against_the_h100():
    """ATen's warp softmax streams a row of 64 or more at its own bytes, not its padded length: rows
    of 77-768 that are not a power of two."""
    errors = _row_errors("h100_softmax_rows.json")
    unpadded = [e for (_, _, row), e in errors.items() if row > 64 and row & (row - 1)]
    assert len(unpadded) == 30 and max(abs(e) for e in unpadded) < 0.2, sorted(unpadded)
    assert statistics.median(abs(e) for e in errors.values()) < 0.08


def test_softmax_backward_rows_against_the_h100():
    """A softmax's backward over warp rows streams two passes (the gradient times the output, then the
    warp kernel), at the bytes' rate in every dtype: float32 at 2^24 elements within 5%."""
    errors = _row_errors("h100_softmax_backward_rows.json")
    large_fp32 = [e for (dtype, rows, row), e in errors.items() if dtype == "float32" and rows * row > 1 << 22]
    assert len(large_fp32) == 13 and max(abs(e) for e in large_fp32) < 0.05, sorted(large_fp32)
    assert statistics.median(abs(e) for e in errors.values()) < 0.12


def test_row_reductions_against_the_h100():
    """A GPU reduction of each innermost row (x.sum(-1), F.normalize's norm) takes a time per row
    below 1024 elements: rows of 8-32 take about 4x a row of 1024's time over the same elements
    (benchmarks/row_kernels.py --op sum|norm). Priced between the reduce_short and reduce_long
    families, rows of 8-64 at 2^24 elements come out within 20%; on the bandwidth curve alone (the
    families dropped), the rows of 8-32 come out 70-90% under."""
    shipped = _shipped_h100()
    bare = shipped.model_copy(deep=True)
    bare.gpu.measurements.pointwise = [c for c in bare.gpu.measurements.pointwise if not c.op.startswith("reduce_")]
    for record in ("h100_sum_rows.json", "h100_norm_rows.json"):
        points = [p for p in json.loads((REPO / "benchmarks" / "results" / record).read_text())["points"] if p["rows"] * p["row"] > 1 << 22]
        errors = {(p["dtype"], p["row"]): row_predicted_s(shipped, p) / p["median_s"] - 1 for p in points}
        short = [e for (_, row), e in errors.items() if row <= 64]
        assert len(short) == 15 and max(abs(e) for e in short) < 0.2, sorted(short)
        assert statistics.median(abs(e) for (_, row), e in errors.items() if row < 1024) < 0.1
    without = [row_predicted_s(bare, p) / p["median_s"] - 1 for p in points if p["row"] <= 32]
    assert len(without) == 9 and max(without) < -0.6, without


def test_which_reductions_are_row_reductions():
    from roofline.graph.capture import capture
    from roofline.model.kernels import inner_reduction_row

    def rows(fn, x):
        return [inner_reduction_row(op) for op in capture(fn, (x,)).ops if op.packet in ("aten.sum", "aten.mean", "aten.linalg_vector_norm", "aten.amax")]

    assert rows(lambda x: F.normalize(x, dim=-1), torch.empty(8, 3, 64, 32)) == [32]
    assert rows(lambda x: x.mean((2, 3)), torch.empty(32, 64, 7, 7)) == [49]  # a pooled plane
    assert rows(lambda x: x.mean((2, 3)), torch.empty(32, 64, 7, 7).contiguous(memory_format=torch.channels_last)) == [None]
    assert rows(lambda x: x.sum(1), torch.empty(32, 2, 64, 56)) == [None]  # an outer dimension
    assert rows(lambda x: x.sum(), torch.empty(8, 64)) == [None]  # to one value
    q = torch.empty(8, 64, 3, 4, 32).permute(2, 0, 3, 1, 4)[0]  # heads split off a fused projection
    assert rows(lambda q: F.normalize(q, dim=-1), q) == [32]


def test_which_reductions_are_outer_reductions():
    from roofline.graph.capture import capture
    from roofline.model.kernels import outer_reduction_width

    def widths(fn, x):
        return [outer_reduction_width(op) for op in capture(fn, (x,)).ops if op.packet in ("aten.sum", "aten.mean", "aten.amax")]

    assert widths(lambda x: x.sum(0), torch.empty(6304, 1152)) == [1152]  # a bias's gradient
    assert widths(lambda x: x.sum((0, 2, 3)), torch.empty(32, 96, 56, 56).contiguous(memory_format=torch.channels_last)) == [96]
    assert widths(lambda x: x.sum((0, 2, 3)), torch.empty(32, 96, 56, 56)) == [None]  # NCHW: the planes are innermost
    assert widths(lambda x: x.sum(1), torch.empty(32, 2, 64, 56)) == [64 * 56]  # ResNeSt's radix sum
    assert widths(lambda x: x.mean(1), torch.empty(4, 50, 768)) == [768]  # tokens pooled
    assert widths(lambda x: x.sum(-1), torch.empty(64, 96)) == [None]  # a row reduction
    assert widths(lambda x: x.sum(), torch.empty(64, 96)) == [None]  # to one value
    assert widths(lambda x: x.sum(-2, keepdim=True), torch.empty(8, 64, 96)) == [96]  # a negative dimension, kept
    assert widths(lambda x: x.t().sum(0), torch.empty(96, 64)) == [None]  # transposed: the reduced rows are innermost
    assert widths(lambda x: x.expand(64, 96).sum(0), torch.empty(1, 96)) == [None]  # a broadcast row: its stride-0 rows sort innermost
    assert widths(lambda x: x[:, :48].sum(0), torch.empty(64, 96)) == [48]  # a slice: a dense run of 48, its rows 96 apart


def test_column_sums_against_the_h100():
    """A reduction over rows that keeps each column (x.sum(0), a bias's gradient; 16-3072 columns
    at 2^20 and 2^24 elements in three dtypes, benchmarks/row_kernels.py --op column_sum) runs below
    the bandwidth curve, furthest over few columns. Priced on the outer-reduction families, log-linear
    in the columns between 64, 256 and 1024, within 12% in the median; with those families dropped
    (the bandwidth curve) 30% or more under in the median."""
    shipped = _shipped_h100()
    bare = shipped.model_copy(deep=True)
    bare.gpu.measurements.pointwise = [c for c in bare.gpu.measurements.pointwise if not c.op.startswith("reduce_outer_")]
    points = json.loads((REPO / "benchmarks" / "results" / "h100_column_sum_rows.json").read_text())["points"]
    assert len(points) == 78 and {p["op"] for p in points} == {"column_sum"}
    errors = [row_predicted_s(shipped, p) / p["median_s"] - 1 for p in points]
    without = [row_predicted_s(bare, p) / p["median_s"] - 1 for p in points]
    assert statistics.median(abs(e) for e in errors) < 0.12
    assert statistics.median(without) < -0.3


def test_the_depthwise_rule_off_the_recorded_grid():
    # What the recorded grid (square, 4-d, channels-last input and weight together) does not reach:
    # ATen views a 1-d convolution as 2-d before it picks (a float16 one at stride 1 runs cuDNN); a
    # channels-last input sends a float32 one to cuDNN; float64 never goes to cuDNN's depthwise path.
    from roofline.graph.capture import capture
    from roofline.model.kernels import is_depthwise, runs_cudnn_depthwise

    def op_of(x, w, stride=1):
        return capture(lambda x, w: (F.conv1d if x.ndim == 3 else F.conv2d)(x, w, None, stride, w.shape[-1] // 2, 1, x.shape[1]), (x, w)).ops[0]

    half = dict(dtype=torch.float16, device="meta")
    one_d = op_of(torch.empty(8, 768, 512, **half), torch.empty(768, 1, 9, **half))
    assert is_depthwise(one_d) and runs_cudnn_depthwise(one_d)
    assert not runs_cudnn_depthwise(op_of(torch.empty(8, 768, 512, **half), torch.empty(768, 1, 9, **half), stride=2))
    assert not runs_cudnn_depthwise(op_of(torch.empty(8, 16, 512, **half), torch.empty(16, 1, 9, **half)))  # under 32 channels
    x = torch.empty(8, 64, 28, 28, device="meta")
    w = torch.empty(64, 1, 7, 7, device="meta")
    assert not runs_cudnn_depthwise(op_of(x, w))  # float32 NCHW: ATen's own
    assert runs_cudnn_depthwise(op_of(x.contiguous(memory_format=torch.channels_last), w))
    x64 = torch.empty(8, 64, 28, 28, dtype=torch.float64, device="meta").contiguous(memory_format=torch.channels_last)
    assert not runs_cudnn_depthwise(op_of(x64, torch.empty(64, 1, 7, 7, dtype=torch.float64, device="meta")))


def test_row_reductions_only_where_the_families_price_them():
    # rows up to 1024 on the two families (rows of exactly 1024 are reduce_long's); longer rows, the
    # CPU, and a profile without the families keep the bandwidth curve
    from roofline.model.device import DeviceModel
    from roofline.model.kernels import _row_reduction_s
    from roofline.costs import cost_of
    from roofline.graph.capture import capture

    shipped = _shipped_h100()
    gpu = DeviceModel(shipped.gpu, "cuda")
    bare = shipped.model_copy(deep=True)
    bare.gpu.measurements.pointwise = [c for c in bare.gpu.measurements.pointwise if not c.op.startswith("reduce_")]

    def priced(fn, row, dev):
        op = capture(fn, (torch.empty(4096, row, device="meta"),)).ops[0]
        c = cost_of(op)[0]
        return _row_reduction_s(op, c, c.bytes_read + c.bytes_written, dev)

    amin = lambda x: x.amin(-1)  # noqa: E731
    assert priced(amin, 64, gpu) is not None and priced(amin, 1024, gpu) is not None
    assert priced(amin, 1025, gpu) is None
    assert priced(amin, 64, DeviceModel(bare.gpu, "cuda")) is None
    assert priced(amin, 64, DeviceModel(shipped.host, "cpu")) is None


def test_measure_foreach_turns_its_three_timings_into_the_rates(monkeypatch):
    """The multi-tensor stage: a kernel's floor is the tiny lists' time over their launches (16 for
    1000 tensors of 1024 over two lists), the chunk its own timing, the streaming rate the large
    lists' bytes (p and g read, p written: 12 bytes an element) over their time."""
    import calibrate.mechanisms as mech
    from roofline.schema.profile import Stat

    times = iter([32e-6, 10e-6, 2e-3])
    monkeypatch.setattr(mech, "_stat", lambda fn, device, budget_s, label, warnings: Stat(median_s=next(times), iqr_s=0.0, samples=5))
    monkeypatch.setattr(mech, "FOREACH_LARGE", (2, 1 << 10))  # the lists are still made: keep them small
    rates = mech.measure_foreach("cpu", budget_s=0.001, warnings=[])
    assert rates.kernel_floor.median_s == pytest.approx(32e-6 / 16)
    assert rates.chunk.median_s == pytest.approx(10e-6)
    assert rates.stream_bytes_per_s == pytest.approx(12 * 2 * (1 << 10) / 2e-3)


# ---- gathers of whole rows: a block of one warp per row -----------------------------------------


def gather_profile(with_curve: bool):
    """The fixture profile with or without the recorded ``gather_rows`` curve, and the H100's
    recorded gathers (``benchmarks/gather_probe.py``)."""
    from roofline.schema.profile import PointwiseCurve

    recorded = json.loads((FIXTURES / "h100_gather_rows.json").read_text())
    p = load_profile_file(FIXTURES / "h100_profile.json")
    p.gpu.measurements.pointwise = [c for c in p.gpu.measurements.pointwise if c.op != "gather_rows"]
    if with_curve:
        p.gpu.measurements.pointwise += [PointwiseCurve(**c) for c in recorded["pointwise"]]
    return p, recorded["checks"]


def row_bytes(check: dict) -> int:
    return check["columns"] * torch.empty((), dtype=DT[check["dtype"]]).element_size()


def test_a_gather_of_short_rows_is_priced_by_its_row_count():
    """BEiT's relative position bias gathers 38,809 rows of 48 bytes: on the H100 a block of one warp
    per row takes 25 us where the bytes take 2. With the calibrated curve the probe's gathers of rows
    that are a multiple of 16 bytes and at most 512 (``table[index]`` and ``index_select``, 4 to 128
    columns, two dtypes, 2,401 to 600,000 rows) land within 15% in the median; on their bytes they
    were priced at a fraction of their time."""
    from benchmarks.gather_probe import predicted_s

    with_curve, checks = gather_profile(True)
    bare, _ = gather_profile(False)
    eligible = [c for c in checks if row_bytes(c) % 16 == 0 and row_bytes(c) <= 512]
    assert len(eligible) >= 20
    errors = [predicted_s(with_curve, c) / (1e-6 * c["kernel_us"]) - 1 for c in eligible]
    bare_errors = [predicted_s(bare, c) / (1e-6 * c["kernel_us"]) - 1 for c in eligible]
    assert statistics.median(map(abs, errors)) < 0.15
    assert statistics.median(bare_errors) < -0.5
    widest = [e for e, c in zip(errors, eligible) if row_bytes(c) == 512]  # the last rows one warp copies
    assert widest and all(abs(e) < 0.2 for e in widest)


def test_other_gathers_keep_their_bytes_price():
    """Rows that are not a multiple of 16 bytes (bfloat16 x 12: an elementwise kernel), rows of more
    than 512 bytes (768 floats: blocks of several warps, bound by their bytes), a gather along the
    second dimension, one by a strided index, one from a table off 16-byte boundaries: the curve
    changes none of them."""
    from benchmarks.gather_probe import predicted_s

    with_curve, checks = gather_profile(True)
    bare, _ = gather_profile(False)
    others = [c for c in checks if row_bytes(c) % 16 or row_bytes(c) > 512]
    assert any(row_bytes(c) % 16 for c in others) and any(row_bytes(c) > 512 for c in others)
    for c in others:
        assert predicted_s(with_curve, c) == pytest.approx(predicted_s(bare, c), rel=1e-9)
    table, index = torch.empty(12, 732), torch.empty(38809, dtype=torch.int64)
    assert kernel_s(lambda t, i: t[:, i], (table, index), with_curve) == pytest.approx(kernel_s(lambda t, i: t[:, i], (table, index), bare), rel=1e-9)
    rows, wide_index = torch.empty(733, 12), torch.empty(38809, 2, dtype=torch.int64)
    shifted = lambda t, i: t.view(-1)[1:1 + 732 * 12].view(732, 12)[i[:, 0].contiguous()]  # noqa: E731 (rows 4 bytes off)
    for fn, args in ((lambda t, i: t[i[:, 0]], (rows, wide_index)), (shifted, (rows, wide_index))):
        assert kernel_s(fn, args, with_curve) == pytest.approx(kernel_s(fn, args, bare), rel=1e-9)
    assert kernel_s(lambda t, i: t[i[:, 0].contiguous()], (rows, wide_index), with_curve) > 5 * kernel_s(lambda t, i: t[i[:, 0].contiguous()], (rows, wide_index), bare)


def test_the_gather_rows_curve_counts_rows_of_its_row_bytes():
    """Calibration's curve: its elements are the rows gathered and its bytes those rows' bytes
    (rows x ``GATHER_ROW_BYTES``), which the model reads back to price other row counts."""
    from calibrate import memory

    (curve,) = memory.measure_gather_rows("cpu", budget_s=0.005, warnings=[], quick=True)
    assert curve.op == "gather_rows" and [p.elements for p in curve.points] == memory.GATHER_ROWS[1:3]
    assert all(p.bytes == p.elements * memory.GATHER_ROW_BYTES for p in curve.points)


# ---- convolutions over channels-last token grids (mechanism_sweep.py --only token_grid) ----


@functools.lru_cache(maxsize=1)
def _token_grid(family: str) -> list[dict]:
    return [p for p in json.loads((FIXTURES / "h100_token_grid.json").read_text())["points"] if p["family"] == family]


def _token_grid_depthwise() -> list[dict]:
    return _token_grid("grid_depthwise")


def _grid_conv_op(p: dict):
    """The captured convolution of a recorded token-grid point (its bias included)."""
    from benchmarks.token_grid_check import inputs

    stride, padding, groups = p["stride"], p["padding"], p["groups"]
    a = Analysis.of(lambda x, w, b: F.conv2d(x, w, b, stride, padding, 1, groups), inputs(p), None, _shipped_h100(),
                    Options(device="cuda", capture_device="cpu", batch_sweep=False))
    return next(op for op in a.graph.ops if op.name.startswith("aten.convolution"))


def _engine_launches(p: dict) -> int:
    return sum(n for k, n in p["launches"].items() if "convolve_common_engine" in k)


def test_cudnn_launches_a_kernel_per_group_where_the_h100_did():
    from roofline.model.kernels import cudnn_depthwise_group_launches

    points = _token_grid_depthwise()
    assert any(_engine_launches(p) > 100 for p in points)
    for p in points:
        assert cudnn_depthwise_group_launches(_grid_conv_op(p)) == _engine_launches(p), p


def test_a_depthwise_convolution_cudnn_loops_over_groups_pays_each_launch():
    from benchmarks.token_grid_check import priced_s

    looped = [p for p in _token_grid_depthwise() if _engine_launches(p)]
    assert len(looped) == 8
    errors = [priced_s(p, _shipped_h100()) / p["median_s"] - 1 for p in looped]
    assert max(abs(e) for e in errors) < 0.3  # one launch a group at the device's floor: -88% to -98% without


def test_a_bfloat16_channels_last_depthwise_convolution_takes_float16s_nhwc_curve():
    from benchmarks.token_grid_check import priced_s

    nhwc = [p for p in _token_grid_depthwise() if p["dtype"] == "bfloat16" and any("conv2d_c1_k1_nhwc" in k for k in p["kernels"])]
    assert len(nhwc) == 6
    errors = [priced_s(p, _shipped_h100()) / p["median_s"] - 1 for p in nhwc]
    assert statistics.median(abs(e) for e in errors) < 0.2  # +131% to +261% at batch 32 on ATen's NCHW curve


def test_the_report_flags_channels_last_depthwise_convolutions_on_cudnns_generic_kernel():
    from roofline.model.kernels import cudnn_may_loop_groups

    for p in _token_grid_depthwise():
        why = cudnn_may_loop_groups(_grid_conv_op(p))
        generic = any("conv2d_grouped_direct_kernel" in k for k in p["kernels"]) and p["layout"] == "channels_last"
        if _engine_launches(p):
            assert why and "one kernel per group" in why, p
        elif generic:
            assert why and "generic grouped kernel" in why, p
        elif p["layout"] == "channels_last":
            assert why is None, p


def test_a_channels_last_convolution_copies_its_nchw_weight_on_every_call():
    """cuDNN runs a channels-last input channels-last and ATen copies an NCHW weight into that
    layout first: ConvNeXt's and EdgeNeXt's 2x2 downsamplings over channels-last token grids."""
    from benchmarks.token_grid_check import priced_s
    from roofline.costs import cost_of
    from roofline.model.kernels import weight_layout_pass_s

    def cost_of_op(op):
        return cost_of(op)[0]

    dense = [p for p in _token_grid("grid_dense") if p["layout"] == "channels_last"]
    dev = Analysis.of(lambda x: x, (torch.empty(1, device="meta"),), None, _shipped_h100(), Options(device="cuda", capture_device="cpu")).dev
    for p in dense:
        op = _grid_conv_op(p)
        copied = weight_layout_pass_s(op, cost_of_op(op), dev)
        assert (copied > 0) == (p["kernel"] > 1), p  # a 1x1 weight is channels-last dense as created
    patches = [p for p in dense if p["kernel"] == 2]
    errors = [priced_s(p, _shipped_h100()) / p["median_s"] - 1 for p in patches]
    assert statistics.median(abs(e) for e in errors) < 0.2  # 30% under without the copy
    nchw = [p for p in _token_grid("grid_dense") if p["layout"] == "nchw"]
    assert all(weight_layout_pass_s(op, cost_of_op(op), dev) == 0 for op in map(_grid_conv_op, nchw))


def test_cudnns_loop_over_groups_costs_the_host_a_launch_a_group_past_the_first():
    """Each kernel cuDNN launches in its loop over groups is a driver launch from C++: priced at the
    profile's CUDA-graph launch (the H100's cuDNN loops took 4.7 us a kernel past the first,
    benchmarks/results/h100_grouped_host_cost.json), none for an op that launches one kernel."""
    from roofline.costs import cost_of
    from roofline.model.timeline import issued_from_cpp_s

    dev = Analysis.of(lambda x: x, (torch.empty(1, device="meta"),), None, _shipped_h100(), Options(device="cuda", capture_device="cpu")).dev
    assert dev.library_launch_s == dev.overheads.graph_launch_s.median_s
    for p in _token_grid_depthwise():
        op = _grid_conv_op(p)
        host = issued_from_cpp_s(op, cost_of(op)[0], dev, 1)
        assert host == pytest.approx(max(_engine_launches(p) - 1, 0) * dev.library_launch_s), p


def test_a_depthwise_gradient_launches_no_group_loop():
    """A backward op's tensors are (grad_output, input, weight): read as a forward convolution, a
    batch that is a multiple of the channels would look like a channel multiplier."""
    from roofline.costs import cost_of
    from roofline.model.kernels import cudnn_depthwise_group_launches
    from roofline.model.timeline import issued_from_cpp_s, parts_host_s

    x = torch.empty(64, 32, 28, 28, dtype=torch.float16, device="meta").contiguous(memory_format=torch.channels_last)
    w = torch.empty(32, 1, 3, 3, dtype=torch.float16, device="meta")
    g = torch.empty(64, 32, 14, 14, dtype=torch.float16, device="meta").contiguous(memory_format=torch.channels_last)

    def backward(g, x, w):
        return torch.ops.aten.convolution_backward(g, x, w, None, [2, 2], [1, 1], [1, 1], False, [0, 0], 32, [True, True, False])

    a = Analysis.of(backward, (g, x, w), None, _shipped_h100(), Options(device="cuda", capture_device="cpu", batch_sweep=False))
    op = next(op for op in a.graph.ops if op.name.startswith("aten.convolution_backward"))
    assert cudnn_depthwise_group_launches(op) == 0
    cost = cost_of(op)[0]
    assert issued_from_cpp_s(op, cost, a.dev, 1) == pytest.approx(parts_host_s(cost, a.dev, 1))  # its parts' issue only


def _batched_tile_errors() -> list[float]:
    """Relative errors of Twins' batched 7-row products (tests/fixtures/h100_batched_tiles.json, per-op
    times from an H100 zoo run) priced with the fixture H100 profile."""
    recorded = json.loads((FIXTURES / "h100_batched_tiles.json").read_text())["points"]
    prof = load_profile_file(FIXTURES / "h100_profile.json")
    errs = []
    for p in recorded:
        dtype = getattr(torch, p["dtype"])
        # the second operand is a linear's weight shared by the batch (stride 0), as torch expands it
        a, b = (torch.empty_strided(p[t], p[f"{t}_stride"], dtype=dtype, device="meta") for t in ("a", "b"))
        analysis = Analysis.of(torch.bmm, (a, b), None, prof, Options(device="cuda", batch_sweep=False, capture_device="cpu"))
        errs.append(sum(k[0] for k in analysis.kernels()) / p["median_s"] - 1)
    return errs


def test_a_batch_of_products_narrower_than_a_tile_computes_whole_tiles(monkeypatch):
    """Twins' 7-row products take 64-row tiles' time (float32 6-7x the tall GEMM of all their rows,
    half precision 2.6-3x); priced as the tall GEMM they came out 62-85% under."""
    errs = _batched_tile_errors()
    assert len(errs) == 6 and max(abs(e) for e in errs) < 0.5, errs
    import roofline.model.kernels as kernels

    monkeypatch.setattr(kernels, "BATCHED_TILE", 1)
    assert statistics.median(_batched_tile_errors()) < -0.5


# ---- patch filters (tests/fixtures/h100_patch_reductions.json) ----


def _without_reduction_patches(prof):
    """``prof`` without its channels-last 8x8 patch points (the spatial reductions calibration times)."""
    for curve in prof.gpu.measurements.conv:
        curve.points = [p for p in curve.points if not (p.kernel == 8 and p.stride == 8 and p.layout == "channels_last")]
    return prof


def _conv_s(x_shape, x_stride, w_shape, dtype, stride, padding, prof) -> float:
    x = torch.empty_strided(x_shape, x_stride, dtype=dtype, device="meta")
    w, b = torch.empty(w_shape, dtype=dtype, device="meta"), torch.empty(w_shape[0], dtype=dtype, device="meta")
    return kernel_s(lambda x, w, b: F.conv2d(x, w, b, stride, padding), (x, w, b), prof)


def test_spatial_reductions_price_from_the_patch_points():
    """SegFormer's, PVT v2's and Twins' 8x8 stride-8 convolutions over channels-last token grids ran
    56-175 µs in float32 on the H100, 74-81% over what the 3x3 and 7x7 points priced; the calibrated
    patch points (other planes and batches) price them within a half."""
    recorded = json.loads((FIXTURES / "h100_patch_reductions.json").read_text())["points"]
    fp32 = [p for p in recorded if p["dtype"] == "float32"]
    assert len(fp32) == 6

    def errors(prof):
        return [_conv_s(p["x"], p["x_stride"], p["w"], torch.float32, 8, 0, prof) / p["median_s"] - 1 for p in fp32]

    with_points = errors(_shipped_h100())
    assert max(abs(e) for e in with_points) < 0.55, with_points
    assert statistics.median(errors(_without_reduction_patches(load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")))) < -0.6


def test_only_patch_filters_read_the_patch_points():
    """An overlapping 5x5 filter (Inception's, AlexNet's) is priced as before the patch points: it
    came out 4-11x over when the 8x8 points were the nearest taps."""
    shipped = _shipped_h100()
    bare = _without_reduction_patches(load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"))
    args = ([32, 48, 35, 35], [58800, 1225, 35, 1], [64, 48, 5, 5], torch.float32, 1, 2)
    assert _conv_s(*args, shipped) == pytest.approx(_conv_s(*args, bare), rel=1e-9)
    patch = ([32, 32, 56, 56], [100352, 1, 1792, 32], [32, 32, 8, 8], torch.float32, 8, 0)
    assert _conv_s(*patch, shipped) > 2 * _conv_s(*patch, bare)


def test_a_patch_filter_is_as_wide_as_its_stride_and_at_least_eight():
    from roofline.model.curves import conv_patch

    assert conv_patch([8, 8], [8, 8]) and conv_patch([16, 16], [16, 16])
    assert not conv_patch([4, 4], [4, 4]) and not conv_patch([8, 8], [4, 4]) and not conv_patch([5, 5], [1, 1])


def test_a_patch_filters_gradients_do_not_read_the_forward_patch_points():
    """The calibrated patch points are forwards; a gradient's stand-in runs other kernels."""
    shipped = _shipped_h100()
    bare = _without_reduction_patches(load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"))
    x = torch.empty_strided([32, 64, 56, 56], [200704, 1, 3584, 64], dtype=torch.float32, device="meta")
    w = torch.empty(64, 64, 8, 8, device="meta")
    g = torch.empty_strided([32, 64, 7, 7], [3136, 1, 448, 64], dtype=torch.float32, device="meta")
    fn = lambda g, x, w: torch.ops.aten.convolution_backward(g, x, w, None, [8, 8], [0, 0], [1, 1], False, [0, 0], 1, [True, True, False])  # noqa: E731

    assert kernel_s(fn, (g, x, w), shipped) == pytest.approx(kernel_s(fn, (g, x, w), bare), rel=1e-9)


def test_products_of_one_row_take_no_tile_floor(monkeypatch):
    """cuBLAS runs a batch of one-row products as matrix-vector kernels, not 64-row tiles."""
    import roofline.model.kernels as kernels

    prof = load_profile_file(FIXTURES / "h100_profile.json")
    a, b = torch.empty(4096, 1, 64, device="meta"), torch.empty(4096, 64, 1024, device="meta")
    seven = torch.empty(4096, 7, 64, device="meta")

    def priced(x):
        return kernel_s(torch.bmm, (x, b), prof)

    with_floor = priced(a), priced(seven)
    monkeypatch.setattr(kernels, "BATCHED_TILE", 1)
    assert with_floor[0] == pytest.approx(priced(a), rel=1e-9)
    assert with_floor[1] > 1.5 * priced(seven)


def test_a_one_pixel_plane_resamples_on_its_own_family():
    """A pooled branch broadcast back (DeepLabV3's image pooling) reads each step's one value from the
    L1 cache: on the H100 a step of a full block took about 120 ns, which the 64x64 family's steps
    priced at 1.9-3.0x (benchmarks/results/h100_upsample.json, ``upsample_check.py``)."""
    recorded = [p for p in json.loads((REPO / "benchmarks" / "results" / "h100_upsample.json").read_text())["points"]
                if p["shape"][2:] == [1, 1] and p["dtype"] == "float32" and p["side"] ** 2 >= 1024]
    assert len(recorded) == 2

    def errors(prof):
        out = []
        for p in recorded:
            x = torch.empty(p["shape"], device="meta")
            fn = lambda x, s=p["side"]: F.interpolate(x, size=(s, s), mode="bilinear", align_corners=False)  # noqa: E731
            out.append(kernel_s(fn, (x,), prof) / p["median_s"] - 1)
        return out

    assert max(abs(e) for e in errors(_shipped_h100())) < 0.2
    without = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    without.gpu.measurements.pointwise = [c for c in without.gpu.measurements.pointwise if c.op != "upsample_bilinear_pixel"]
    assert min(errors(without)) > 0.8


def _im2col_errors(prof) -> list[tuple[dict, float]]:
    """(point, relative error) of ConvBERT's and VOLO's unfolds (tests/fixtures/h100_im2col.json) priced with ``prof``."""
    recorded = json.loads((FIXTURES / "h100_im2col.json").read_text())["points"]
    errs = []
    for p in recorded:
        x = torch.empty(p["x"], dtype=getattr(torch, p["dtype"]), device="meta")
        fn = lambda x, p=p: F.unfold(x, p["kernel_size"], p["dilation"], p["padding"], p["stride"])  # noqa: E731
        errs.append((p, kernel_s(fn, (x,), prof) / p["median_s"] - 1))
    return errs


def test_an_unfold_launches_one_kernel_an_image(monkeypatch):
    """ATen's GPU im2col loops over the batch in C++, a launch an image, each a thread per (channel,
    output position) walking the filter: ConvBERT's 8 images took 47 µs, VOLO's 32 took 187-206 µs,
    priced 89-95% under as one pass over their bytes."""
    errs = [e for _, e in _im2col_errors(_shipped_h100())]
    assert len(errs) == 6 and max(abs(e) for e in errs) < 0.55, errs
    import roofline.model.kernels as kernels

    monkeypatch.setattr(kernels, "aten_im2col_launches", lambda op: 1)
    batched = [e for p, e in _im2col_errors(_shipped_h100()) if p["x"][0] > 1]
    assert max(batched) < -0.75, batched


def test_an_unfold_pays_a_library_launch_an_image_past_the_first_on_the_host():
    from roofline.model.timeline import group_loop_host_s

    prof = _shipped_h100()
    x = torch.empty(8, 384, 128, 1, device="meta")
    analysis = Analysis.of(lambda x: F.unfold(x, (9, 1), 1, (4, 0), 1), (x,), None, prof, Options(device="cuda", batch_sweep=False, capture_device="cpu"))
    op = next(o for o in analysis.graph.ops if o.packet == "aten.im2col")
    cost = analysis.costs[analysis.graph.ops.index(op)]
    assert group_loop_host_s(op, cost, analysis.dev) == pytest.approx(7 * analysis.dev.library_launch_s)
