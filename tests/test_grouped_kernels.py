"""Convolutions whose kernel cuDNN may run group by group are flagged as uncertain, on the H100's
recorded sweep (``benchmarks/results/h100_grouped_kernels.json``, ``python benchmarks/mechanism_sweep.py
--only grouped_kernels`` on the lent H100), and a timed kernel clears the flag."""

import pytest
import torch

from benchmarks.grouped_kernels_check import per_group, priced
from benchmarks.sweep_checks import sweep_points
from roofline.graph.training import TrainStep
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


def _without_few_group_points(profile):
    stripped = profile.model_copy(deep=True)
    stripped.gpu.measurements.conv_families = [c for c in stripped.gpu.measurements.conv_families if c.kind != "grouped_few"]
    return stripped


def test_three_groups_are_priced_as_the_nearest_few_group_point_ran(profile):
    # calibration's few-group points (the shipped profile's, timed on the lent H100) are 2 groups at
    # stride 2 over 56 and 112 pixels; the sweep's 3-group convolutions at those sides are held out:
    # cuDNN looped over the groups of all but the 48-wide one over 112 pixels, ~10x the grouped price
    assert any(c.kind == "grouped_few" for c in profile.gpu.measurements.conv_families)
    held = [p for p in FEW if p["dtype"] == "float32" and p["groups"] == 3 and p["stride"] == 2 and p["side"] in (56, 112)]
    looped = [p for p in held if per_group(p)]
    assert len(held) == 8 and len(looped) == 7
    for p in held:
        assert 0.75 < p["median_s"] / priced(profile, p)[0] < 1.3, p
    without = _without_few_group_points(profile)
    assert all(p["median_s"] > 4 * priced(without, p)[0] for p in looped)


def test_stride_one_and_small_planes_keep_the_grouped_price(profile):
    # the points say nothing of stride 1 (cuDNN loops there at other widths and sides) nor of planes
    # beyond their reach (28 pixels: looped at 16-24 a group, not at 32-48)
    without = _without_few_group_points(profile)
    for stride, side in ((1, 56), (1, 112), (2, 28)):
        point = dict(family="grouped_few", dtype="float32", batch=32, groups=3, width=24, side=side, stride=stride)
        assert priced(profile, point)[0] == priced(without, point)[0], (stride, side)


def test_a_point_under_the_looped_ratio_leaves_the_grouped_price(profile):
    # points timed at twice the grouped family's price (under LOOPED_RATIO, 3x) say cuDNN ran the
    # grouped kernel there: the op keeps the grouped price
    from roofline.model.families import ConvFamilyModel
    from roofline.schema.profile import Stat

    near = profile.model_copy(deep=True)
    model = ConvFamilyModel(near.gpu.measurements.conv_families)
    for curve in near.gpu.measurements.conv_families:
        if curve.kind == "grouped_few":
            for p in curve.points:
                grouped = model.time_s("grouped", "float32", "nchw", p.kernel, p.stride, p.channels // p.groups, p.macs)
                p.time = Stat(median_s=2.0 * grouped, iqr_s=0.0, samples=5)
    point = dict(family="grouped_few", dtype="float32", batch=32, groups=3, width=24, side=112, stride=2)
    assert priced(near, point)[0] == priced(_without_few_group_points(profile), point)[0]
    assert priced(profile, point)[0] > 5 * priced(near, point)[0]


def test_a_gradient_keeps_the_grouped_price(profile):
    # the points time forwards: a training step's convolution_backward of the same layer is priced as before
    model = torch.nn.Conv2d(72, 72, 3, 2, 1, groups=3)
    x = torch.empty(32, 72, 112, 112, device="meta")
    options = Options(device="cuda", capture_device="cpu", batch_sweep=False, train=TrainStep())
    times = []
    for p in (profile, _without_few_group_points(profile)):
        a = Analysis.of(model, (x,), None, p, options)
        times.append({op.name: r.kernel_s for op, r in zip(a.graph.ops, a.report().ops)})
    assert times[0]["aten.convolution_backward.default"] == times[1]["aten.convolution_backward.default"]
    assert times[0]["aten.convolution.default"] > 5 * times[1]["aten.convolution.default"]


def _flags(fn, *inputs, device="cuda", profile=None):
    a = Analysis.of(fn, inputs, None, profile, Options(device=device, capture_device="cpu", batch_sweep=False))
    return [why for op, why in zip(a.graph.ops, a.uncertain) if "convolution" in op.name]


def test_up_to_56_channels_a_group_are_flagged_not_64(profile):
    # the zoo's convolutions of 2-3 groups at 64-256 channels a group ran their grouped kernels
    for width, flagged in ((56, True), (64, False)):
        point = dict(family="grouped_few", dtype="float32", batch=32, groups=3, width=width, side=56, stride=2)
        assert priced(profile, point)[1] == flagged, width


@pytest.mark.parametrize("case", ["one image", "float16", "1x1", "channels-last", "1-d", "transposed", "on the CPU"])
def test_what_the_records_ran_at_its_price_is_not_flagged(profile, case):
    F = torch.nn.functional
    x = torch.empty(1 if case == "one image" else 32, 72, 56, 56, device="meta",
                    dtype=torch.float16 if case == "float16" else torch.float32)
    w = torch.empty(72, 24, 1 if case == "1x1" else 3, 1 if case == "1x1" else 3, device="meta", dtype=x.dtype)
    if case == "channels-last":
        x = x.contiguous(memory_format=torch.channels_last)
    if case == "1-d":
        flags = _flags(lambda x, w: F.conv1d(x, w, None, 2, 1, 1, 3), x[:, :, 0], w[:, :, 0], profile=profile)
    elif case == "transposed":
        flags = _flags(lambda x, w: F.conv_transpose2d(x, w, None, 2, 1, 0, 3), x, w.reshape(72, 24, 3, 3), profile=profile)
    else:
        flags = _flags(lambda x, w: F.conv2d(x, w, None, 2, 1 if w.shape[-1] == 3 else 0, 1, 3), x, w, profile=profile,
                       device="cpu" if case == "on the CPU" else "cuda")
    assert flags and not any(flags), case
    assert any(_flags(lambda x, w: F.conv2d(x, w, None, 2, 1, 1, 3), torch.empty(32, 72, 56, 56, device="meta"),
                      torch.empty(72, 24, 3, 3, device="meta"), profile=profile))


def test_a_gradient_is_not_flagged(profile):
    # a training step's convolution_backward: its kernels were not recorded
    model = torch.nn.Conv2d(48, 48, 3, 2, 1, groups=3)
    a = Analysis.of(model, (torch.empty(32, 48, 56, 56, device="meta"),), None, profile,
                    Options(device="cuda", capture_device="cpu", batch_sweep=False, train=TrainStep()))
    ops = {op.name: why for op, why in zip(a.graph.ops, a.uncertain)}
    assert ops["aten.convolution.default"] and ops["aten.convolution_backward.default"] is None


def test_a_depthwise_convolution_with_a_multiplier_is_flagged_where_cudnn_runs_it(profile):
    # PiT's strided pooling: a channels-last input, which cuDNN runs; in NCHW float32 ATen's own kernel
    # runs it at its price (the record's 20 float32 shapes)
    conv = lambda x, w: torch.nn.functional.conv2d(x, w, None, 2, 1, 1, 288)  # noqa: E731
    x = torch.empty(32, 14, 14, 288, dtype=torch.float16, device="meta").permute(0, 3, 1, 2)
    twice = torch.empty(576, 1, 3, 3, dtype=torch.float16, device="meta")
    assert any(why and "channel multiplier" in why for why in _flags(conv, x, twice, profile=profile))
    assert not any(_flags(conv, x, twice[:288], profile=profile))
    nchw = torch.empty(32, 288, 14, 14, device="meta")
    assert not any(_flags(conv, nchw, torch.empty(576, 1, 3, 3, device="meta"), profile=profile))


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
