"""Fused attention at head sizes calibration does not measure: time affine in the head size
(``DeviceModel.attention_head_factor``), float32 on its own two calibrated head sizes, and half-precision heads
run at multiples of 32 (``kernels.half_head_dim``), against the H100's timings (``benchmarks/results/h100_attention_heads.json``,
``python benchmarks/mechanism_sweep.py --only attention_heads`` on the lent H100) with the shipped profile."""

import statistics

import pytest

from benchmarks.attention_heads_check import predicted_s
from benchmarks.sweep_checks import sweep_points
from roofline.model import kernels
from roofline.model.device import DeviceModel
from roofline.profiles import load_profile_file
from tests.conftest import REPO, recorded_op_error

H100 = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"
SWEEP = REPO / "benchmarks" / "results" / "h100_attention_heads.json"


def test_half_precision_heads_run_at_multiples_of_32():
    assert [kernels.half_head_dim(d) for d in (16, 32, 40, 48, 64, 80, 96, 112)] == [32, 32, 64, 64, 64, 96, 96, 128]


def test_the_head_factor_is_affine_between_calibrated_sizes_not_proportional():
    dev = DeviceModel(load_profile_file(H100).gpu, "cuda")
    assert dev.attention_head_factor("bfloat16", False, 64, 64, 8192, 8192 * 32) == 1.0
    # at long sequences half the head takes more than half the time (the softmax does not shrink)
    half = dev.attention_head_factor("bfloat16", False, 32, 64, 8192, 8192 * 32) * 32 / 64
    assert 0.6 < half < 0.95
    # float32 has its own two head sizes (32 and 64): its line, not the half-precision kernels', prices it
    assert dev.attention_head_factor("float32", False, 32, 64, 8192, 8192 * 32) != pytest.approx(
        dev.attention_head_factor("bfloat16", False, 32, 64, 8192, 8192 * 32), rel=0.02)


def _without_float32_head(profile, head_dim: int):
    gpu = profile.gpu.model_copy(deep=True)
    gpu.measurements.attention = [c for c in gpu.measurements.attention if (c.dtype, c.head_dim) != ("float32", head_dim)]
    return profile.model_copy(update=dict(gpu=gpu))


def test_calibration_measures_the_shipped_attention_curves():
    from calibrate.runner import ATTENTION_CURVES

    shipped = {(c.dtype, c.head_dim, c.causal) for c in load_profile_file(H100).gpu.measurements.attention}
    assert set(ATTENTION_CURVES) == shipped and ("float32", 32, False) in shipped


# (case, the op's query shape) of the held-out zoo (``benchmarks/results/h100_heldout.json``): float32 heads of 32-36
HELD_OUT_FLOAT32_HEADS = [("timm_mobilevit_s b32 fp32", [128, 4, 256, 36]), ("hf_segformer_b0 b32 fp32", [32, 2, 4096, 32])]


def test_float32_heads_of_the_held_out_zoo_price_on_float32s_own_32_wide_curve():
    """float32's memory-efficient kernel shrinks less with the head than the half-precision kernels: priced from
    its 64-wide curve on their line's shape, MobileViT's and SegFormer's narrow float32 heads come out 14-28% under."""
    profile = load_profile_file(H100)
    for case, query in HELD_OUT_FLOAT32_HEADS:
        def error(prof):
            return recorded_op_error("h100_heldout.json", case, lambda o: "attention" in o["op"] and o["shapes"][0] == query, prof)

        own, borrowed = error(profile), error(_without_float32_head(profile, 32))
        assert abs(own) < 0.12 and abs(borrowed) > abs(own) + 0.05, (case, own, borrowed)


def _errors(profile) -> list[float]:
    return [predicted_s(profile, p) / p["median_s"] - 1 for p in sweep_points(SWEEP, "attention_heads")]


def test_off_calibration_heads_against_the_h100(monkeypatch):
    profile = load_profile_file(H100)
    errors = _errors(profile)
    assert statistics.median(abs(e) for e in errors) < 0.15
    # half-precision 36-wide heads left out: SDPA pads them to a multiple of 8 before FlashAttention runs, unpriced
    padded = [p["dtype"] != "float32" and p["head_dim"] % 8 != 0 for p in sweep_points(SWEEP, "attention_heads")]
    assert max(abs(e) for e, pad in zip(errors, padded) if not pad) < 0.45
    # priced proportionally to the head size (the calibrated head's rate), the p90 is far worse
    monkeypatch.setattr(DeviceModel, "attention_head_factor", lambda *a: 1.0)
    monkeypatch.setattr(kernels, "half_head_dim", lambda d: d)
    proportional = sorted(abs(e) for e in _errors(profile))
    assert proportional[int(0.9 * (len(proportional) - 1))] > 0.3
