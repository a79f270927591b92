import functools
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=1)
def shipped_h100():
    """The shipped H100 profile, read once: for tests that only price with it or take its curves
    (one that changes a profile loads its own)."""
    from roofline.profiles import load_profile_file

    return load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: long-running test (a GPT-2-XL-sized capture and the like)")


# the tests that need the session's one CPU calibration (``cpu_quick_profile_path``, ~20 s) run on one
# xdist worker (``--dist loadgroup`` in pyproject.toml), so the suite calibrates once, not once a worker
QUICK_PROFILE_GROUP = "cpu_quick_profile"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "cpu_quick_profile_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(QUICK_PROFILE_GROUP))


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


def run_cli(*args, env=None, timeout=300, process=False):
    """Run `roofline ARGS` and return a CompletedProcess with its exit code, stdout and stderr.

    By default in this process, through the same `main` the entry point calls: the parser, the command, the one-line
    errors and the exit code as a user gets them, without a fresh interpreter importing torch for each test.
    `process=True` runs `python -m roofline ARGS` instead, for what only a process shows (its imports, signals, the
    installed entry point); ``timeout`` bounds only such a process."""
    if process:
        return subprocess.run(
            [sys.executable, "-m", "roofline", *args], capture_output=True, text=True,
            env={**os.environ, **(env or {})}, cwd=REPO, timeout=timeout,
        )
    import contextlib
    import io
    import warnings

    from roofline.cli import main

    saved_env, saved_cwd, saved_modules = dict(os.environ), os.getcwd(), set(sys.modules)
    out, err = io.StringIO(), io.StringIO()
    os.environ.update(env or {})
    os.chdir(REPO)
    try:
        # every warning printed to this run's stderr, as a fresh process prints it
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: print(
                warnings.formatwarning(message, category, filename, lineno, line), end="", file=sys.stderr)
            try:
                code = main(list(args))
            except SystemExit as e:  # argparse's --help, --version and usage errors
                if isinstance(e.code, str):
                    print(e.code, file=sys.stderr)
                code = e.code if isinstance(e.code, int) else int(e.code is not None)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        # a model file's sibling modules belong to its run (installed and project packages stay): the next run
        # imports its own
        kept = (sys.prefix, sys.base_prefix, str(REPO / "roofline"), str(REPO / "calibrate"), str(REPO / "benchmarks"))
        for name in set(sys.modules) - saved_modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file and not file.startswith(kept):
                del sys.modules[name]
    return subprocess.CompletedProcess(["roofline", *args], code, out.getvalue(), err.getvalue())


@functools.lru_cache(maxsize=None)
def recorded_run(name: str) -> tuple[dict, dict, object, dict]:
    """A GPU zoo record of ``benchmarks/results``: (its rows by case label, its captured graphs, the Options it
    was priced with, the record itself). Read once per test process."""
    from roofline.pipeline import Options

    results = REPO / "benchmarks" / "results"
    record = json.loads((results / name).read_text())
    with gzip.open(results / record["graphs_file"], "rt") as f:
        graphs = json.load(f)["graphs"]
    options = Options(device="cuda", allow_tf32=record["allow_tf32"], conv_tf32=record["conv_tf32"], batch_sweep=False)
    return {r["label"]: r for r in record["rows"]}, graphs, options, record


def recorded_op_error(name: str, case: str, pick, profile) -> float:
    """(predicted - measured) / measured of the first op of a recorded case that ``pick`` (a priced op's row:
    op, shapes, measured_s) chooses, priced with ``profile``."""
    from benchmarks.zoo.run import priced_ops
    from roofline.graph.serialize import graph_from_dict
    from roofline.pipeline import Analysis

    rows, graphs, options, _ = recorded_run(name)
    analysis = Analysis(graph_from_dict(graphs[case]), profile, "cuda", options, name=case)
    measured = dict(rows[case]["ops"])
    ops = priced_ops(analysis, [measured.get(i) for i in range(len(analysis.graph.ops))])
    op = next(o for o in ops if o["measured_s"] and pick(o))
    return (op["predicted_s"] - op["measured_s"]) / op["measured_s"]
