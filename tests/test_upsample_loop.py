"""GPU bilinear resampling priced by its loop (``roofline.model.kernels._upsample_loop_s``): against
the H100's timings (``benchmarks/results/h100_upsample.json``, ``python benchmarks/upsample_check.py
--measure`` on the lent H100) with the shipped H100 profile."""

import json

import pytest
import torch

from benchmarks.sweep_checks import kernel_s
from benchmarks.upsample_check import DTYPES, _call
from benchmarks.zoo.run import without_stages
from roofline.profiles import load_profile_file
from tests.conftest import REPO

H100 = REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"
POINTS = json.loads((REPO / "benchmarks" / "results" / "h100_upsample.json").read_text())["points"]
# the loops of many steps: a batch of channel maps (the one-image, three-channel ones are launch-bound)
LOOPS = [p for p in POINTS if p["mode"] == "bilinear" and p["shape"][0] * p["shape"][1] >= 168 and p["shape"][2] > 7]


def _error(profile, p: dict) -> float:
    with torch.device("meta"):
        x = torch.empty(*p["shape"], dtype=DTYPES[p["dtype"]])
    return kernel_s(_call(p["mode"], p["side"]), (x,), profile) / p["median_s"] - 1


@pytest.mark.parametrize("point", LOOPS, ids=lambda p: f"{p['shape']}->{p['side']} {p['dtype']}")
def test_bilinear_resampling_is_priced_by_its_loop(point):
    error = _error(load_profile_file(H100), point)
    assert abs(error) < 0.35, f"{100 * error:+.0f}% against the H100"


def test_by_bytes_a_batch_of_resampled_maps_is_an_order_of_magnitude_under():
    (point,) = [p for p in POINTS if p["mode"] == "bilinear" and p["shape"] == [32, 256, 16, 16] and p["dtype"] == "float32"]
    bytes_only = without_stages(load_profile_file(H100), "cuda", ["pointwise:upsample_bilinear"])
    assert _error(bytes_only, point) < -0.8
