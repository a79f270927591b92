"""Each kernel mechanism against the H100's own measurements: ops of the zoo record
(``benchmarks/results/h100_zoo.json``, measured on the lent H100 on 2026-11-25 beside the profile the
session calibrated) priced with that profile, and again with the mechanism's calibration stage
removed (``benchmarks/zoo/run.without_stages``). The mechanism must bring the op within its band of
the measurement, and pricing without it must miss by far more."""

import pytest

from benchmarks.zoo.run import without_stages
from roofline.profiles import load_profile_file
from tests.conftest import REPO, recorded_op_error, recorded_run

RESULTS = REPO / "benchmarks" / "results"
STRIDED = ["pointwise:strided_copy", "pointwise:transpose_copy", "pointwise:cat_strided"]

# (case, op, its first two input shapes, calibration stages the mechanism prices it with)
CASES = [
    ("hf_whisper_tiny b1 fp32", "aten._scaled_dot_product_efficient_attention.default", [[1, 6, 32, 64], [1, 6, 1500, 64]], ["attention"]),
    ("tv_resnet50 b32 fp16", "aten.native_batch_norm.default", [[32, 2048, 7, 7], [2048]], ["norm_families"]),
    ("unet_small b1 fp32", "aten.native_group_norm.default", [[1, 32, 128, 128], [32]], ["norm_families"]),
    ("tv_swin_t b32 fp16", "aten.clone.default", [[2048, 3, 32, 49]], STRIDED),
    ("hf_whisper_tiny b8 fp16", "aten.add.Tensor", [[8, 1500, 384], [8, 1500, 384]], STRIDED),
    ("timm_deit_small b32 fp16", "aten.convolution.default", [[32, 3, 224, 224], [384, 3, 16, 16]], ["conv"]),
]
BAND = 0.35
RECORD = "h100_zoo.json"


@pytest.fixture(scope="module")
def profile():
    """The profile the record's session calibrated."""
    return load_profile_file(RESULTS / recorded_run(RECORD)[3]["profile_file"])


def _error(case, op_name, shapes, profile) -> float:
    return recorded_op_error(RECORD, case, lambda o: o["op"] == op_name and o["shapes"][: len(shapes)] == shapes, profile)


@pytest.mark.parametrize("case,op_name,shapes,stages", CASES, ids=[f"{c[0]}: {c[1].split('.')[1]}" for c in CASES])
def test_mechanism_prices_the_measured_op(profile, case, op_name, shapes, stages):
    error = _error(case, op_name, shapes, profile)
    assert abs(error) < BAND, f"{case} {op_name}: {100 * error:+.0f}% against the H100's measurement"
    without = _error(case, op_name, shapes, without_stages(profile, "cuda", stages))
    assert abs(without) > abs(error) + 0.25, f"without {stages}: {100 * without:+.0f}% (with: {100 * error:+.0f}%)"


# softmax over rows of 49 (Swin's 7 x 7 windows): ATen's warp-per-row kernel walks each row as one of 64
SOFTMAX_CASES = [("tv_swin_t b32 fp32", [[2048, 3, 49, 49]]), ("tv_swin_t b32 fp16", [[512, 6, 49, 49]])]


@pytest.mark.parametrize("case,shapes", SOFTMAX_CASES, ids=[c[0] for c in SOFTMAX_CASES])
def test_short_softmax_rows_are_priced_at_their_padded_length(profile, case, shapes, monkeypatch):
    import roofline.model.kernels as kernels

    error = _error(case, "aten._softmax.default", shapes, profile)
    assert abs(error) < 0.15, f"{case} softmax: {100 * error:+.0f}% against the H100's measurement"
    monkeypatch.setattr(kernels, "_warp_softmax_row", lambda *a: None)
    unpadded = _error(case, "aten._softmax.default", shapes, profile)
    assert unpadded < error - 0.15, f"rows priced unpadded: {100 * unpadded:+.0f}% (padded: {100 * error:+.0f}%)"
