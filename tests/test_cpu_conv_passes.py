"""oneDNN's CPU convolutions priced by pass (roofline.model.curves.CpuConvPassModel): each pass's
efficiency on the implicit GEMM plus the reorders of its NCHW tensors, against points recorded on
the 2-core Intel Xeon, one thread (tests/fixtures/cpu_conv_passes.json: that host's float32 matmul
curve, its calibrated passes and 24 held-out convolutions of benchmarks/cpu_conv_sweep.py)."""

import json
import statistics

import pytest

from benchmarks.cpu_conv_sweep import predicted_s
from roofline.model.curves import CpuConvPassModel, onednn_elements
from roofline.model.device import DeviceModel
from roofline.profiles import load_profile_file
from roofline.schema.profile import ConvCurve, MatmulCurve
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="module")
def recorded():
    return json.loads((FIXTURES / "cpu_conv_passes.json").read_text())


def device(recorded, passes: bool = True, threads: int = 1) -> DeviceModel:
    p = load_profile_file(REPO / "benchmarks" / "results" / "cpu_2core_zoo_profile.json")
    m = p.host.measurements
    m.matmul = [MatmulCurve(**recorded["matmul_float32"])] + [c for c in m.matmul if c.dtype != "float32"]
    m.conv_passes = [ConvCurve(**recorded["conv_passes"])] if passes else []
    p.host.identity.threads_used = threads
    return DeviceModel(p.host, "cpu")


def errors(recorded, dev, variant, keep=lambda shape: True):
    return [predicted_s(dev, p["shape"], variant) / p[variant] - 1 for p in recorded["sweep"] if keep(p["shape"])]


def median_abs(e):
    return statistics.median(abs(v) for v in e)


def test_reorders_counted_per_pass():
    x, y = (8, 16, 32, 32), (8, 32, 16, 16)
    nx, ny = 8 * 16 * 32 * 32, 8 * 32 * 16 * 16
    assert onednn_elements("none", x, y, 2) == nx + ny
    assert onednn_elements("none", (8, 3, 32, 32), y, 2) == ny  # a stem's NCHW input is read as it is
    assert onednn_elements("weight", x, y, 2) == nx + ny
    assert onednn_elements("input", x, y, 1) == nx + ny
    assert onednn_elements("input", x, y, 2) == 3 * nx + ny  # channels-last kernel, copied back twice


def test_fit_recovers_efficiency_and_rate(recorded):
    """Points made from known efficiencies and a known rate give them back."""
    from roofline.costs.conv import conv_gemm

    matmul = device(recorded).matmul["float32"]
    curve = ConvCurve(**recorded["conv_passes"])
    eff, rate = {"none": 1.1, "input": 1.3, "weight": 0.9}, 0.5e-9
    for p in curve.points:
        x, w, out = p.shapes()
        _, m, n, k = conv_gemm(x, w, out, transposed=False)
        p.time.median_s = eff[p.gradient] * matmul.time_s(m, n, k) + rate * onednn_elements(p.gradient, x, out, p.stride)
    fit = CpuConvPassModel(curve, matmul)
    assert fit.element_s == pytest.approx(rate, rel=1e-3)
    for g, v in eff.items():
        assert fit.efficiency[g] == pytest.approx(v, rel=1e-3)


def test_held_out_convolutions_by_pass(recorded):
    """The 24 held-out convolutions: each pass nearer its measured time than the old pricing (the
    forward's ratio from 4 one-image points, each gradient priced as the forward)."""
    new, old = device(recorded), device(recorded, passes=False)
    not_stem = lambda shape: shape[1] >= 16  # noqa: E731
    for variant, keep, bound in (("forward", lambda s: True, 0.3), ("weight", lambda s: True, 0.3), ("input", not_stem, 0.35)):
        after, before = median_abs(errors(recorded, new, variant, keep)), median_abs(errors(recorded, old, variant, keep))
        assert after < bound and after < before, (variant, after, before)


def test_strided_input_gradient_copies(recorded):
    """A stride-2 input gradient pays its channels-last copies: without them the held-out strided
    input gradients are priced further under their time (with them still ~33% under: the copies
    into fresh pages cost this host more than a reorder's rate)."""
    dev = device(recorded)
    strided = lambda shape: shape[5] > 1 and shape[1] >= 16  # noqa: E731
    with_copies = statistics.median(errors(recorded, dev, "input", strided))
    assert with_copies > -0.4
    import roofline.model.curves as curves

    real = curves.onednn_elements
    try:
        curves.onednn_elements = lambda g, x, out, stride: real(g, x, out, 1)
        dev_without = device(recorded)
        assert statistics.median(errors(recorded, dev_without, "input", strided)) < with_copies - 0.03
    finally:
        curves.onednn_elements = real


def test_aten_own_kernels_and_older_profiles_keep_the_old_price(recorded):
    """A 1x1 stride-1 convolution of fewer than 16 images on one thread is ATen's own GEMM, not
    oneDNN: priced as before; so is every convolution of a profile without calibrated passes."""
    new, old = device(recorded), device(recorded, passes=False)
    small_1x1 = (4, 128, 128, 28, 1, 1)
    assert predicted_s(new, small_1x1, "forward") == predicted_s(old, small_1x1, "forward")
    assert predicted_s(device(recorded, threads=2), small_1x1, "forward") != predicted_s(old, small_1x1, "forward")
    assert old.conv_passes is None and new.conv_passes is not None
    assert predicted_s(new, (8, 64, 64, 28, 3, 1), "forward") != predicted_s(old, (8, 64, 64, 28, 3, 1), "forward")
