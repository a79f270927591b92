import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (a GPT-2-XL-sized capture and the like)")


@pytest.fixture(scope="session")
def cpu_quick_profile_path(tmp_path_factory):
    """One real `roofline calibrate --device cpu --quick` run, shared by the tests that need a profile. --force: on a
    machine other programs keep busy the profile may fail its sanity checks; these tests need a profile, not a quiet
    machine (tests/test_calibration_robust.py tests the refusal)."""
    out = tmp_path_factory.mktemp("profiles") / "cpu-quick.json"
    env = {**os.environ, "ROOFLINE_PROFILE_DIR": str(out.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "roofline", "calibrate", "--device", "cpu", "--quick", "--no-progress", "--force", "--output", str(out), "--name", "cpu-quick"],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return out


def run_cli(*args, env=None, timeout=300):
    """Run `python -m roofline ARGS` and return the CompletedProcess."""
    return subprocess.run(
        [sys.executable, "-m", "roofline", *args], capture_output=True, text=True,
        env={**os.environ, **(env or {})}, cwd=REPO, timeout=timeout,
    )
