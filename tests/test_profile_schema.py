"""The profile schema: round trip, rejection of impossible values, and loader errors."""

import json

import pytest

from roofline.errors import ProfileError
from roofline.schema.profile import BandwidthCurve, DeviceProfile, MatmulCurve, MatmulPoint, Stat
from roofline.profiles import find_profile, load_profile_file, save_profile


def test_round_trip_is_lossless(cpu_quick_profile_path, tmp_path):
    p = load_profile_file(cpu_quick_profile_path)
    out = save_profile(p, tmp_path / "again.json")
    q = load_profile_file(out)
    assert q.model_dump() == p.model_dump()
    assert q.schema_version == 1 and q.kind == "roofline-device-profile"


def test_quick_profile_has_every_measurement(cpu_quick_profile_path):
    p = load_profile_file(cpu_quick_profile_path)
    m = p.host.measurements
    assert p.gpu is None
    assert m.matmul_curve("float32") is not None
    assert {c.kind for c in m.bandwidth} == {"copy", "read", "write"}
    assert m.pointwise and m.pointwise[0].op == "sin"
    assert m.overheads.dispatch_s.median_s > 0 and m.overheads.op_small_s is not None
    assert p.host.identity.threads_used >= 1
    for curve in m.matmul:
        assert len(curve.points) == len(curve.grid) ** 3
        for point in curve.points:
            assert point.time.samples >= 1 and point.time.iqr_s >= 0


def test_stat_rejects_impossible_values():
    with pytest.raises(ValueError):
        Stat(median_s=-1e-6, iqr_s=0, samples=3)
    with pytest.raises(ValueError):
        Stat(median_s=1e-6, iqr_s=-1, samples=3)
    with pytest.raises(ValueError):
        Stat(median_s=1e-6, iqr_s=0, samples=0)


def test_rate_must_match_time():
    # 2*64*64*64 = 524288 FLOP in 1 us = 5.24e11 FLOP/s; 1e15 does not match the time
    stat = Stat(median_s=1e-6, iqr_s=0, samples=5)
    MatmulPoint(m=64, n=64, k=64, time=stat, flop_per_s=524288 / 1e-6)
    with pytest.raises(ValueError, match="does not match"):
        MatmulPoint(m=64, n=64, k=64, time=stat, flop_per_s=1e15)


def test_rates_beyond_physics_rejected():
    # 2*8192^3 FLOP in 1 ns is 1e21 FLOP/s: a unit mistake, not a GPU
    stat = Stat(median_s=1e-9, iqr_s=0, samples=5)
    with pytest.raises(ValueError):
        MatmulPoint(m=8192, n=8192, k=8192, time=stat, flop_per_s=2 * 8192**3 / 1e-9)


def test_incomplete_grid_rejected():
    stat = Stat(median_s=1e-6, iqr_s=0, samples=5)
    pt = MatmulPoint(m=1, n=1, k=1, time=stat, flop_per_s=2 / 1e-6)
    with pytest.raises(ValueError, match="missing"):
        MatmulCurve(dtype="float32", grid=[1, 2], points=[pt])


def test_unsorted_bandwidth_rejected(cpu_quick_profile_path):
    data = json.loads(cpu_quick_profile_path.read_text())
    pts = data["host"]["measurements"]["bandwidth"][0]["points"]
    pts.reverse()
    with pytest.raises(ValueError, match="sorted"):
        BandwidthCurve.model_validate(data["host"]["measurements"]["bandwidth"][0])


def test_unknown_fields_rejected(cpu_quick_profile_path):
    data = json.loads(cpu_quick_profile_path.read_text())
    data["host"]["identity"]["bogus"] = 1
    with pytest.raises(ValueError):
        DeviceProfile.model_validate(data)


def test_corrupt_file_one_line_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(ProfileError, match="corrupt") as e:
        load_profile_file(bad)
    assert "\n" not in str(e.value)


def test_a_gzipped_profile_loads_as_its_json(cpu_quick_profile_path, tmp_path):
    # records keep the profile they ran with compressed beside them (benchmarks/results/*_profile.json.gz)
    import gzip

    packed = tmp_path / "p.json.gz"
    packed.write_bytes(gzip.compress(cpu_quick_profile_path.read_bytes()))
    assert load_profile_file(packed).model_dump() == load_profile_file(cpu_quick_profile_path).model_dump()
    fake = tmp_path / "not.json.gz"
    fake.write_text(cpu_quick_profile_path.read_text())
    with pytest.raises(ProfileError, match="not a gzip file") as e:
        load_profile_file(fake)
    assert "\n" not in str(e.value)
    body = bytearray(packed.read_bytes())
    body[20:60] = bytes(40)  # a gzip header over a damaged stream
    fake.write_bytes(bytes(body))
    with pytest.raises(ProfileError, match="not a gzip file"):
        load_profile_file(fake)


def test_foreign_file_error(tmp_path):
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps({"name": "something else", "values": [1, 2]}))
    with pytest.raises(ProfileError, match="not a roofline device profile"):
        load_profile_file(foreign)


def test_newer_schema_error(cpu_quick_profile_path, tmp_path):
    data = json.loads(cpu_quick_profile_path.read_text())
    data["schema_version"] = 99
    f = tmp_path / "future.json"
    f.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="schema_version"):
        load_profile_file(f)


def test_tampered_value_error_names_the_field(cpu_quick_profile_path, tmp_path):
    data = json.loads(cpu_quick_profile_path.read_text())
    data["host"]["measurements"]["overheads"]["dispatch_s"]["median_s"] = -5
    f = tmp_path / "tampered.json"
    f.write_text(json.dumps(data))
    with pytest.raises(ProfileError, match="dispatch_s"):
        load_profile_file(f)


def test_find_by_name_and_unknown_name(cpu_quick_profile_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_PROFILE_DIR", str(cpu_quick_profile_path.parent))
    assert find_profile("cpu-quick").name == "cpu-quick"
    with pytest.raises(ProfileError, match="no profile named"):
        find_profile("no-such-profile")


def test_shipped_profiles_validate():
    from roofline.profiles import available_profiles, shipped_profile_dir

    files = sorted(shipped_profile_dir().glob("*.json"))
    for f in files:
        load_profile_file(f)  # raises if a shipped profile does not validate
    assert len([e for e in available_profiles() if e.source == "shipped"]) == len(files)


def _profile_data(path):
    return json.loads(path.read_text())


def test_unsorted_pointwise_curve_rejected(cpu_quick_profile_path):
    data = _profile_data(cpu_quick_profile_path)
    data["host"]["measurements"]["pointwise"][0]["points"].reverse()
    with pytest.raises(ValueError, match="sorted"):
        DeviceProfile.model_validate(data)


def test_matmul_point_off_the_grid_rejected(cpu_quick_profile_path):
    data = _profile_data(cpu_quick_profile_path)
    pts = data["host"]["measurements"]["matmul"][0]["points"]
    extra = dict(pts[-1])
    extra["m"] = 3  # 3 is not a grid size; keep the rate consistent with the time
    extra["flop_per_s"] = 2 * 3 * extra["n"] * extra["k"] / extra["time"]["median_s"]
    pts.append(extra)
    with pytest.raises(ValueError, match="off the grid"):
        DeviceProfile.model_validate(data)


def test_profile_without_copy_curve_rejected(cpu_quick_profile_path):
    data = _profile_data(cpu_quick_profile_path)
    m = data["host"]["measurements"]
    m["bandwidth"] = [c for c in m["bandwidth"] if c["kind"] != "copy"]
    with pytest.raises(ValueError, match="copy"):
        DeviceProfile.model_validate(data)


def test_attention_rate_must_match_time():
    from roofline.schema.profile import AttentionCurve, AttentionPoint

    stat = Stat(median_s=1e-3, iqr_s=0, samples=5)
    # 4 * 8 * 512^2 * 64 = 536870912 FLOP in 1 ms = 5.37e11 FLOP/s
    AttentionCurve(dtype="bfloat16", head_dim=64, causal=False, points=[AttentionPoint(batch_heads=8, seq=512, time=stat, flop_per_s=536870912 / 1e-3)])
    with pytest.raises(ValueError, match="does not match"):
        AttentionCurve(dtype="bfloat16", head_dim=64, causal=False, points=[AttentionPoint(batch_heads=8, seq=512, time=stat, flop_per_s=1e15)])


def test_an_installed_wheel_finds_the_shipped_profiles_under_its_prefix(tmp_path):
    """pyproject's data-files put device_profiles/*.json under <prefix>/share/roofline/device_profiles."""
    import tomllib

    from roofline.profiles import installed_profile_dir
    from tests.conftest import REPO

    data_files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    assert data_files == {"share/roofline/device_profiles": ["device_profiles/*.json"]}
    empty, wheel = tmp_path / "venv", tmp_path / "user"
    empty.mkdir()
    (wheel / "share" / "roofline" / "device_profiles").mkdir(parents=True)
    assert installed_profile_dir([empty]) is None
    assert installed_profile_dir([empty, wheel]) == wheel / "share" / "roofline" / "device_profiles"


def _saved(folder, file_stem: str, name: str, hostname: str):
    import json as _json

    from tests.conftest import REPO

    data = _json.loads((REPO / "tests" / "fixtures" / "h100_profile.json").read_text())
    data["name"], data["calibration"]["hostname"] = name, hostname
    (folder / f"{file_stem}.json").write_text(_json.dumps(data))


def test_profile_is_found_by_the_name_profiles_lists_and_duplicates_are_told_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_PROFILE_DIR", str(tmp_path))
    _saved(tmp_path, "first-file", "lab-box", "node-a")
    assert find_profile("lab-box").calibration.hostname == "node-a"  # the name, not the file's stem
    _saved(tmp_path, "second-file", "lab-box", "node-b")
    with pytest.raises(ProfileError) as err:
        find_profile("lab-box")
    assert "2 profiles are named 'lab-box'" in str(err.value) and "node-a" in str(err.value) and "node-b" in str(err.value)


def test_profiles_lists_an_unusable_file_as_unusable(tmp_path):
    from tests.conftest import run_cli

    (tmp_path / "broken.json").write_text("{oops")
    proc = run_cli("profiles", env={"ROOFLINE_PROFILE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "broken" in proc.stdout and "unusable" in proc.stdout and "corrupt" in proc.stdout
