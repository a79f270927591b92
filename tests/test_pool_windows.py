"""GPU pooling priced by window work (``roofline.model.kernels.pool_costs``): against the H100's
own timings of pools networks run (``benchmarks/results/h100_pools.json``, recorded on the lent
H100 by ``python benchmarks/pool_check.py --measure``), with the shipped H100 profile."""

import json
from types import SimpleNamespace

import pytest
import torch

from benchmarks.pool_check import predicted_s
from benchmarks.zoo.run import without_stages
from roofline.model import kernels
from roofline.profiles import load_profile_file
from tests.conftest import REPO

H100 = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"
POOLS = json.loads((REPO / "benchmarks" / "results" / "h100_pools.json").read_text())["points"]


def _curve(times_s: dict[int, float]):
    points = [SimpleNamespace(elements=n, time=SimpleNamespace(median_s=t)) for n, t in times_s.items()]
    return SimpleNamespace(curve=SimpleNamespace(points=points))


def test_an_outputs_cost_and_an_average_tap_come_from_the_three_curves():
    # an output costs a = 6 taps: 3x3 takes (6 + 9) units, 2x2 (6 + 4); an average's tap half a max's
    unit = 1e-6
    dev = SimpleNamespace(family={
        ("max_pool2d", "float32"): _curve({1 << 20: 15 * unit, 1 << 10: 3 * unit}),
        ("max_pool2d_2x2", "float32"): _curve({1 << 20: 10 * unit, 1 << 10: 3 * unit}),
        ("avg_pool2d_3x3", "float32"): _curve({1 << 20: (6 + 4.5) * unit}),
    })
    a, tap = kernels.pool_costs(dev)
    assert a == pytest.approx(6.0)
    assert tap == pytest.approx(0.5)
    del dev.family[("avg_pool2d_3x3", "float32")]
    assert kernels.pool_costs(dev) == (pytest.approx(6.0), 1.0)
    del dev.family[("max_pool2d_2x2", "float32")]
    assert kernels.pool_costs(dev) is None


# 2-d NCHW pools of a batch (one image's pool is a launch's time, +21% here; 3-d and channels-last
# pools run other kernels and keep their bytes' price)
WINDOWS = [p for p in POOLS if p["kind"] != "max3d" and p["shape"][0] > 1 and p.get("layout", "nchw") == "nchw"]


@pytest.mark.parametrize("point", WINDOWS, ids=lambda p: f"{p['name']} {p['dtype']}")
def test_pools_are_priced_by_their_window_work(point):
    profile = load_profile_file(H100)
    error = predicted_s(profile, point) / point["median_s"] - 1
    assert abs(error) < 0.2, f"{point['name']} {point['dtype']}: {100 * error:+.0f}% against the H100"


def test_by_bytes_alone_a_stride_one_pool_is_far_under():
    # Inception's 3x3 stride-1 average: priced by bytes at the 3x3 stride-2 max pool's rate, it is
    # more than 40% under the H100's time; by window work within 20% (the test above)
    (point,) = [p for p in POOLS if p["name"] == "inception avg 3x3/1" and p["dtype"] == "float32"]
    bytes_only = without_stages(load_profile_file(H100), "cuda", ["pointwise:max_pool2d_2x2"])
    assert predicted_s(bytes_only, point) / point["median_s"] - 1 < -0.4


def test_a_channels_last_pool_keeps_its_bytes_price():
    (point,) = [p for p in POOLS if p["name"] == "channels-last max 2x2/2" and p["dtype"] == "float32"]
    profile = load_profile_file(H100)
    bytes_only = without_stages(profile, "cuda", ["pointwise:max_pool2d_2x2"])
    assert predicted_s(profile, point) == pytest.approx(predicted_s(bytes_only, point))


def test_without_stages_drops_an_optional_measurement_that_defaults_to_none():
    """``--drop foreach``: the multi-tensor rates are optional (None), as the curve lists are (empty)."""
    from pathlib import Path

    from roofline.profiles import load_profile_file

    profile = load_profile_file(Path(__file__).parent.parent / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    assert profile.gpu.measurements.foreach is not None
    assert without_stages(profile, "cuda", ["foreach"]).gpu.measurements.foreach is None
    with pytest.raises(SystemExit, match="not an optional measurement"):
        without_stages(profile, "cuda", ["overheads"])


def test_a_max_pool_backward_runs_at_its_own_rate_against_the_h100():
    """A max pool's backward walks the windows over each input, reading their gradients and indices:
    on the shipped profile's max_pool2d_backward family, the H100's per-op times of ResNet's 3x3
    stride-2 and a UNet's 2x2 stride-2 pool backward (``python benchmarks/train_check.py --per-op``,
    ``h100_train_own.json``) within 25%; at the copy's rate by their bytes, less than half."""
    import torch

    from tests.test_mechanisms import kernel_s

    record = json.loads((REPO / "benchmarks" / "results" / "h100_train_own.json").read_text())
    ops = [(r["case"], o) for r in record["rows"] for o in r["op_rows"] if o["op"].startswith("aten.max_pool2d_with_indices_backward")]
    profile = load_profile_file(H100)
    bytes_only = without_stages(profile, "cuda", ["pointwise:max_pool2d_backward"])
    assert len(ops) >= 4
    for case, o in ops:
        g_shape, x_shape, _ = o["shapes"]
        k, pad = (3, 1) if "resnet" in case else (2, 0)
        args = (torch.empty(g_shape), torch.empty(x_shape), torch.zeros(g_shape, dtype=torch.int64))
        fn = lambda g, x, i: torch.ops.aten.max_pool2d_with_indices_backward(g, x, [k, k], [2, 2], [pad, pad], [1, 1], False, i)  # noqa: B023, E731
        assert kernel_s(fn, args, profile) == pytest.approx(o["measured_s"], rel=0.25)
        assert kernel_s(fn, args, bytes_only) < 0.5 * o["measured_s"]


# Adaptive average pools of channels-first planes to their own side, as the held-out VGG-11 and the
# third set's AlexNet ran them on the H100 (kernel times of ``h100_heldout.json`` and ``h100_fresh.json``):
# a block per plane, so time follows the planes
ADAPTIVE_MEASURED = [((32, 512, 7, 7), torch.float32, 45.6e-6), ((32, 512, 7, 7), torch.float16, 46.4e-6),
                     ((32, 256, 6, 6), torch.float32, 20.7e-6), ((32, 256, 6, 6), torch.float16, 20.6e-6)]


@pytest.mark.parametrize("shape, dtype, measured", ADAPTIVE_MEASURED, ids=lambda v: str(v))
def test_an_adaptive_average_pool_is_priced_by_its_planes(shape, dtype, measured):
    from roofline.pipeline import Analysis, Options

    profile = load_profile_file(H100)
    x = torch.empty(shape, dtype=dtype, device="meta")
    pool = torch.nn.AdaptiveAvgPool2d(shape[-2:])
    options = Options(device="cuda", capture_device="cpu", batch_sweep=False)
    priced = [sum(k[0] for k in Analysis.of(pool, (x,), None, p, options).kernels())
              for p in (profile, without_stages(profile, "cuda", [f"pointwise:{kernels.ADAPTIVE_POOL_FAMILY}"]))]
    assert abs(priced[0] / measured - 1) < 0.25, priced[0]
    assert priced[1] < 0.2 * measured  # by its bytes
