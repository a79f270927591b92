"""`roofline calibrate` and `roofline profiles` on the CPU, and their one-line errors."""

import torch

from roofline.profiles import load_profile_file
from tests.conftest import run_cli


def test_cpu_quick_calibration_writes_a_valid_profile(cpu_quick_profile_path):
    p = load_profile_file(cpu_quick_profile_path)
    assert p.calibration.quick
    assert p.calibration.duration_s > 0
    # the CPU's fp32 matmul peak is a plausible rate: above 1 GFLOP/s, below the derived ceiling x 1.5
    peak = p.host.measurements.matmul_curve("float32").peak_flop_per_s
    assert peak > 1e9
    if "float32" in p.host.peaks.flop_per_s:
        assert peak < 1.5 * p.host.peaks.flop_per_s["float32"]


def _assert_one_line_error(proc, *needles):
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_absent_gpu_is_one_clear_line():
    if torch.cuda.is_available():
        proc = run_cli("calibrate", "--device", "cuda:7")
        _assert_one_line_error(proc, "cuda:7")
    else:
        proc = run_cli("calibrate", "--device", "cuda")
        _assert_one_line_error(proc, "--device cpu")
        proc = run_cli("calibrate", "--device", "cuda:7")
        _assert_one_line_error(proc, "cuda:7")


def test_unknown_device_string():
    _assert_one_line_error(run_cli("calibrate", "--device", "tpu"), "unknown device")


def test_unwritable_output_is_one_clear_line(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    target = "/proc/roofline-cannot-write/p.json"
    proc = run_cli("calibrate", "--device", "cpu", "--quick", "--output", target)
    _assert_one_line_error(proc, "cannot write")
    proc = run_cli("calibrate", "--device", "cpu", "--quick", "--output", str(tmp_path))
    _assert_one_line_error(proc, "is a directory")


def test_profiles_lists_saved(cpu_quick_profile_path):
    proc = run_cli("profiles", env={"ROOFLINE_PROFILE_DIR": str(cpu_quick_profile_path.parent)})
    assert proc.returncode == 0, proc.stderr
    assert "cpu-quick" in proc.stdout and "saved" in proc.stdout


def test_an_output_path_that_cannot_be_written_fails_before_measuring(monkeypatch, capsys):
    """Permissions alone pass as root on /proc: the folder and a file in it are made before any measurement."""
    import calibrate.runner
    from roofline.cli import main

    def measured(*args, **kwargs):
        raise AssertionError("calibration ran before the output path was checked")

    monkeypatch.setattr(calibrate.runner, "run_calibration", measured)
    assert main(["calibrate", "--device", "cpu", "--quick", "--output", "/proc/roofline-cannot-write/p.json"]) == 2
    assert "cannot write profile to /proc/roofline-cannot-write/p.json" in capsys.readouterr().err


def test_a_calibration_says_which_profile_it_replaces(tmp_path, monkeypatch, capsys):
    import calibrate.runner
    from roofline.cli import main
    from tests.conftest import REPO

    fixture = load_profile_file(REPO / "tests" / "fixtures" / "h100_profile.json")
    monkeypatch.setattr(calibrate.runner, "run_calibration", lambda *a, **k: fixture)
    out = tmp_path / "p.json"
    assert main(["calibrate", "--device", "cpu", "--no-progress", "--output", str(out)]) == 0
    assert "replacing" not in capsys.readouterr().out
    assert main(["calibrate", "--device", "cpu", "--no-progress", "--output", str(out)]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert f"replacing profile '{fixture.name}' of {fixture.calibration.created_at:%Y-%m-%d %H:%M}" in said
