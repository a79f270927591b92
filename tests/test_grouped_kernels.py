"""Convolutions whose kernel cuDNN may run group by group are flagged as uncertain, on the H100's
recorded sweep (``benchmarks/results/h100_grouped_kernels.json``, ``python benchmarks/mechanism_sweep.py
--only grouped_kernels`` on the lent H100), and a timed kernel clears the flag."""

import pytest
import torch

from benchmarks.grouped_kernels_check import per_group, priced
from benchmarks.sweep_checks import sweep_points
from roofline.model.kernel_table import kernel_key
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from roofline.schema.profile import KernelEntry, Stat
from tests.conftest import REPO

H100 = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"
SWEEP = REPO / "benchmarks" / "results" / "h100_grouped_kernels.json"
FEW = sweep_points(SWEEP, "grouped_few")


@pytest.fixture(scope="module")
def profile():
    return load_profile_file(H100)


def test_float32_convolutions_of_two_or_three_groups_are_flagged_and_run_far_slower_per_group(profile):
    # the flag depends on groups, width, batch, dtype and layout, not the plane: the 28 x 28 points span it
    points = [p for p in FEW if p["dtype"] == "float32" and p["side"] == 28]
    priced_points = [(p, *priced(profile, p)) for p in points]
    assert [flagged for _, _, flagged in priced_points] == [p["groups"] <= 3 for p in points]
    looped = [(p, t) for p, t, _ in priced_points if per_group(p)]
    assert len(looped) >= 6 and all(p["groups"] <= 3 for p, _ in looped)
    assert all(p["median_s"] > 4 * t for p, t in looped)


def test_wide_groups_one_image_and_half_precision_are_not_flagged(profile):
    # the zoo's convolutions of 2-3 groups at 64-256 channels a group, or of one image, ran their grouped kernels
    for groups, width, batch, dtype in ((2, 64, 32, "float32"), (3, 24, 1, "float32"), (3, 24, 32, "float16")):
        point = dict(family="grouped_few", dtype=dtype, batch=batch, groups=groups, width=width, side=56, stride=2)
        assert not priced(profile, point)[1], (groups, width, batch, dtype)


def test_a_channels_last_depthwise_convolution_with_a_multiplier_is_flagged(profile):
    # PiT's strided pooling: cuDNN runs it (a channels-last input) one legacy kernel per group
    x = torch.empty(32, 14, 14, 288, dtype=torch.float16, device="meta").permute(0, 3, 1, 2)
    w = torch.empty(576, 1, 3, 3, dtype=torch.float16, device="meta")
    a = Analysis.of(lambda x, w: torch.nn.functional.conv2d(x, w, None, 2, 1, 1, 288), (x, w), None, profile,
                    Options(device="cuda", capture_device="cpu", batch_sweep=False))
    assert any(why and "channel multiplier" in why for why in a.uncertain)
    same = torch.empty(576, 1, 3, 3, dtype=torch.float16, device="meta")[:288]
    plain = Analysis.of(lambda x, w: torch.nn.functional.conv2d(x, w, None, 2, 1, 1, 288), (x, same), None, profile,
                        Options(device="cuda", capture_device="cpu", batch_sweep=False))
    assert not any(plain.uncertain)


def test_a_timed_kernel_clears_the_flag(profile):
    x = torch.empty(32, 72, 112, 112, device="meta")
    w = torch.empty(72, 24, 3, 3, device="meta")
    options = Options(device="cuda", capture_device="cpu", batch_sweep=False)
    a = Analysis.of(lambda x, w: torch.nn.functional.conv2d(x, w, None, 2, 1, 1, 3), (x, w), None, profile, options)
    conv = next(i for i, op in enumerate(a.graph.ops) if "convolution" in op.name)
    assert "3 groups" in a.uncertain[conv]
    timed = profile.model_copy(deep=True)
    timed.gpu.measurements.kernels.append(KernelEntry(key=kernel_key(a.graph.ops[conv]), op=a.graph.ops[conv].name,
                                                      time=Stat(median_s=2.8e-3, iqr_s=0.0, samples=5)))
    again = Analysis(a.graph, timed, "cuda", options)
    assert again.uncertain[conv] is None and again.report().ops[conv].kernel_s == 2.8e-3
