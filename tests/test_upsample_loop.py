"""GPU resampling priced by the work of its threads (``roofline.model.kernels._upsample_s``): against
the H100's timings (``benchmarks/results/h100_upsample.json``, ``python benchmarks/upsample_check.py
--measure`` on the lent H100) with the shipped H100 profile."""

import json

import pytest

from benchmarks.upsample_check import predicted_s
from benchmarks.zoo.run import without_stages
from roofline.profiles import load_profile_file
from tests.conftest import REPO

H100 = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"
POINTS = json.loads((REPO / "benchmarks" / "results" / "h100_upsample.json").read_text())["points"]


def _find(mode: str, shape: list, side: int, dtype: str = "float32", layout: str = "nchw") -> dict:
    (point,) = [p for p in POINTS if (p["mode"], p["shape"], p["side"], p["dtype"], p.get("layout", "nchw")) == (mode, shape, side, dtype, layout)]
    return point


def _error(profile, p: dict) -> float:
    return predicted_s(profile, p) / p["median_s"] - 1


# channels-first loops of many steps: a batch of channel maps (one image of a few channels is a
# launch's time, and 32 x 512 maps of 7 x 7 to 14 x 14 run 196 threads, each step faster than the
# calibrated loop's: +31-40%, outside this band)
LOOPS = [p for p in POINTS if p["mode"] == "bilinear" and p.get("layout", "nchw") == "nchw"
         and p["shape"][0] * p["shape"][1] >= 168 and p["shape"][2] > 7 and p["side"] != p["shape"][2]]


@pytest.mark.parametrize("point", LOOPS, ids=lambda p: f"{p['shape']}->{p['side']} {p['dtype']}")
def test_bilinear_resampling_is_priced_by_its_loop(point):
    error = _error(load_profile_file(H100), point)
    assert abs(error) < 0.35, f"{100 * error:+.0f}% against the H100"


def test_by_bytes_a_batch_of_resampled_maps_is_an_order_of_magnitude_under():
    point = _find("bilinear", [32, 256, 16, 16], 128)
    bytes_only = without_stages(load_profile_file(H100), "cuda", ["pointwise:upsample_bilinear"])
    assert _error(bytes_only, point) < -0.8


def test_an_image_resized_whole_is_bound_by_its_threads_work():
    # 16.8M output positions, more than the GPU holds threads: waves of a thread per output, not
    # one step of the loop (priced as one step: -99%)
    error = _error(load_profile_file(H100), _find("bilinear", [1, 1, 2048, 2048], 4096))
    assert abs(error) < 0.25, f"{100 * error:+.0f}%"


def test_a_resize_to_its_own_size_is_a_copy():
    # ATen copies the input: 32 x 256 maps of 64 x 64 take a copy's 92 us, not a loop's 3.3 ms
    error = _error(load_profile_file(H100), _find("bilinear", [32, 256, 64, 64], 64))
    assert abs(error) < 0.25, f"{100 * error:+.0f}%"


def test_nearest_neighbour_resampling_runs_below_the_copy_rate():
    # a thread per output element computing its source index: about half the copy's rate, on its own family
    point = _find("nearest", [16, 128, 32, 32], 64)
    profile = load_profile_file(H100)
    assert abs(_error(profile, point)) < 0.25
    as_a_copy = without_stages(profile, "cuda", ["pointwise:upsample_nearest"])
    assert _error(as_a_copy, point) < -0.4
