"""calibrate.host_level: a GPU profile's host costs moved to the host-speed index its recorded runs saw."""

import json
import shutil

import pytest

from calibrate.host_level import at_host_level, index_readings_s, main
from roofline.model.host import calibrated_index_s
from roofline.profiles import load_profile_file
from tests.conftest import REPO

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"


def _record(tmp_path, name, scales, profile=PROFILE):
    """A record of runs timed beside the host-speed index at these scales of ``profile``'s index."""
    shutil.copy(profile, tmp_path / f"{name}_profile.json")
    rows = [dict(label=f"case {i}", host_scale=s) for i, s in enumerate(scales)] + [dict(label="fixed", host_scale=None)]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(dict(kind="cuda", profile_file=f"{name}_profile.json", rows=rows)))
    return path


def test_readings_pool_across_records_and_move_every_host_cost(tmp_path):
    profile = load_profile_file(PROFILE)
    ov = profile.gpu.measurements.overheads
    index_s = calibrated_index_s(ov)
    a = _record(tmp_path, "a", [0.7, 0.8, 0.9])
    b = _record(tmp_path, "b", [0.6, 1.3])
    assert index_readings_s(a) == pytest.approx([0.7 * index_s, 0.8 * index_s, 0.9 * index_s])
    moved, level, factor = at_host_level(profile, [a, b])
    # the typical session: the median of the records' medians (0.8 and 0.95), not of the five readings (0.8)
    assert level.factor == factor == pytest.approx(0.875) and level.readings == 5 and level.records == ["a.json", "b.json"]
    new = moved.gpu.measurements.overheads
    assert new.host_level == level
    assert new.dispatch_s.median_s == pytest.approx(0.875 * ov.dispatch_s.median_s)
    assert new.dispatch_by_op_s["addmm"].median_s == pytest.approx(0.875 * ov.dispatch_by_op_s["addmm"].median_s)
    assert new.module_call_s.median_s == pytest.approx(0.875 * ov.module_call_s.median_s)
    assert calibrated_index_s(new) == pytest.approx(0.875 * index_s)  # later runs read about 1.0 against it
    assert new.kernel_min_s == ov.kernel_min_s and new.interleave_factor == ov.interleave_factor  # device time, a ratio
    assert moved.gpu.measurements.matmul == profile.gpu.measurements.matmul
    if ov.training is not None:
        assert new.training.autograd_node_s.median_s == pytest.approx(0.875 * ov.training.autograd_node_s.median_s)


def test_a_session_of_many_runs_does_not_outweigh_the_others(tmp_path):
    # three sessions: one of 100 runs at x0.6, two of 3 runs at x1.0 and x1.2; pooled, the readings'
    # median would be x0.6, the typical session is x1.0
    records = [_record(tmp_path, "long", [0.6] * 100), _record(tmp_path, "b", [0.9, 1.0, 1.1]), _record(tmp_path, "c", [1.2] * 3)]
    _, level, factor = at_host_level(load_profile_file(PROFILE), records)
    assert factor == pytest.approx(1.0) and level.readings == 106


def test_moving_again_with_the_same_readings_changes_nothing(tmp_path):
    # readings are seconds of index (each record's scale times its own profile's index), so a profile
    # already moved to them stays where it is
    record = _record(tmp_path, "a", [0.5, 0.5])
    target = tmp_path / "target.json"
    shutil.copy(PROFILE, target)
    assert main([str(target), str(record), "--write"]) == 0
    once = load_profile_file(target).gpu.measurements.overheads
    assert once.host_level.factor == pytest.approx(0.5)
    assert main([str(target), str(record), "--write"]) == 0
    twice = load_profile_file(target).gpu.measurements.overheads
    assert twice.host_level.factor == pytest.approx(0.5)
    assert twice.dispatch_s.median_s == pytest.approx(once.dispatch_s.median_s)


def test_a_record_without_readings_is_one_clear_line(tmp_path):
    record = _record(tmp_path, "a", [])
    with pytest.raises(SystemExit, match="no host-speed readings"):
        main([str(PROFILE), str(record)])


def test_a_record_without_its_profile_is_one_clear_line(tmp_path):
    # a 20-model accuracy record keeps no profile: its readings have no scale
    record = tmp_path / "acc.json"
    record.write_text(json.dumps(dict(kind="cuda", rows=[dict(label="a", host_scale=1.1)])))
    with pytest.raises(SystemExit, match="names no profile file"):
        main([str(PROFILE), str(record)])
