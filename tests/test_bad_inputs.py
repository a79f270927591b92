"""Bad and unusual inputs, tried as a new user would, each through the real command line.

Every error case must end in exit code 2 with exactly one non-empty line on stderr that names the
problem, nothing on stdout and no traceback (an uncaught exception fails the test with its own
traceback). The cheap cases run in-process through ``roofline.cli.main(argv)``; a few run
``python -m roofline`` in a subprocess, among them Ctrl-C (SIGINT: exit 130, one line). The
unusual-but-valid inputs at the end must succeed.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from roofline.cli import main
from tests.conftest import REPO

H100 = "nvidia-h100-80gb-hbm3"
MLP = str(REPO / "examples" / "mlp_tiny.py")

# Model files of the corpus, written once into one folder ({d} in the command lines below).
MODEL_FILES = {
    "ok.py": "import torch\nmodel = torch.nn.Linear(8, 8)\nexample_inputs = (torch.randn(2, 8),)\n",
    "empty.py": "",
    "syntax.py": "import torch\nmodel = torch.nn.Linear(8, 8\n",
    "raises.py": "import torch\nraise ValueError('no weights here')\n",
    "exits.py": "import sys\nsys.exit(3)\n",
    "needs_pkg.py": "import roofline_no_such_package\n",
    "neither.py": "import torch\nnet = torch.nn.Linear(2, 2)\ninputs = (torch.randn(1, 2),)\n",
    "no_inputs.py": "import torch\nmodel = torch.nn.Linear(2, 2)\n",
    "no_model.py": "import torch\nexample_inputs = (torch.randn(1, 2),)\n",
    "get_not_callable.py": "import torch\nget_model = torch.nn.Linear(2, 2)\nget_example_inputs = (torch.randn(1, 2),)\n",
    "get_model_raises.py": "import torch\ndef get_model():\n    raise RuntimeError('checkpoint missing')\ndef get_example_inputs():\n    return (torch.randn(1, 2),)\n",
    "model_int.py": "import torch\nmodel = 42\nexample_inputs = (torch.randn(1, 2),)\n",
    "model_none.py": "import torch\nmodel = None\nexample_inputs = (torch.randn(1, 2),)\n",
    "inputs_none.py": "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = None\n",
    "inputs_str.py": "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = 'x.pt'\n",
    "inputs_badkey.py": "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = {0: torch.randn(1, 2)}\n",
    "shape_mismatch.py": (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(16, 4)\n"
        "    def forward(self, x):\n"
        "        return self.fc(x)\n"
        "model = M()\n"
        "example_inputs = (torch.randn(2, 5),)\n"
    ),
    "too_many_inputs.py": "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = (torch.randn(1, 2), torch.randn(1, 2))\n",
    "wrong_kwarg.py": "import torch\nmodel = torch.nn.Linear(2, 2)\nexample_inputs = {'inputs': torch.randn(1, 2)}\n",
    "dtype_mismatch.py": "import torch\nmodel = torch.nn.Linear(4, 4)\nexample_inputs = (torch.ones(2, 4, dtype=torch.int64),)\n",
    "item_branch.py": (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(8, 8)\n"
        "    def forward(self, x):\n"
        "        y = self.fc(x)\n"
        "        if y.sum().item() > 0:\n"
        "            return y.relu()\n"
        "        return y\n"
        "model = M()\n"
        "example_inputs = (torch.randn(4, 8),)\n"
    ),
    "data_shape.py": (
        "import torch\n"
        "def f(x):\n"
        "    return x[x > 0].sum()\n"
        "model = f\n"
        "example_inputs = (torch.randn(64),)\n"
    ),
    # over 1 MiB of weights: captured under fake tensors, where a read of a tensor value cannot be followed
    "big_item.py": (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(1024, 1024)\n"
        "    def forward(self, x):\n"
        "        y = self.fc(x)\n"
        "        if y.sum().item() > 0:\n"
        "            return y.relu()\n"
        "        return y\n"
        "model = M()\n"
        "example_inputs = (torch.randn(64, 1024),)\n"
    ),
    "big_mask.py": (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(1024, 1024)\n"
        "    def forward(self, x):\n"
        "        y = self.fc(x)\n"
        "        return y[y > 0].sum()\n"
        "model = M()\n"
        "example_inputs = (torch.randn(64, 1024),)\n"
    ),
    "no_sweep.py": "import torch\nmodel = torch.nn.Linear(8, 8)\nexample_inputs = (torch.randn(2, 8),)\n",
    # unusual but valid
    "no_params.py": "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return torch.sin(x) * 2\nmodel = M()\nexample_inputs = (torch.randn(4, 8),)\n",
    "dict_input.py": (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(8, 8)\n"
        "    def forward(self, x, mask=None):\n"
        "        return self.fc(x) * mask\n"
        "model = M()\n"
        "example_inputs = {'x': torch.randn(4, 8), 'mask': torch.ones(4, 8)}\n"
    ),
    "int_input.py": (
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(8, 8)\n"
        "    def forward(self, x, repeats: int):\n"
        "        for _ in range(repeats):\n"
        "            x = self.fc(x)\n"
        "        return x\n"
        "model = M()\n"
        "example_inputs = (torch.randn(4, 8), 3)\n"
    ),
    "dataclass_out.py": (
        "import dataclasses\n"
        "import torch\n"
        "@dataclasses.dataclass\n"
        "class Out:\n"
        "    logits: torch.Tensor\n"
        "    hidden: torch.Tensor\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.fc = torch.nn.Linear(8, 8)\n"
        "    def forward(self, x):\n"
        "        h = self.fc(x)\n"
        "        return Out(logits=h.softmax(-1), hidden=h)\n"
        "model = M()\n"
        "example_inputs = (torch.randn(4, 8),)\n"
    ),
    "bare_tensor.py": "import torch\nmodel = torch.nn.Linear(8, 8)\nexample_inputs = torch.randn(2, 8)\n",
    "function_model.py": "import torch\ndef model(a, b):\n    return a @ b\nexample_inputs = (torch.randn(16, 32), torch.randn(32, 8))\n",
    # Ctrl-C targets: each writes a marker when it reaches the slow part, then waits there
    "slow_import.py": (
        "import os, time, torch\n"
        "open(os.environ['ROOFLINE_TEST_MARKER'], 'w').close()\n"
        "time.sleep(60)\n"
        "model = torch.nn.Linear(2, 2)\nexample_inputs = (torch.randn(1, 2),)\n"
    ),
    "slow_forward.py": (
        "import os, time, torch\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        open(os.environ['ROOFLINE_TEST_MARKER'], 'w').close()\n"
        "        time.sleep(60)\n"
        "        return x\n"
        "model = M()\nexample_inputs = (torch.randn(1, 2),)\n"
    ),
}


def _write_corpus(d: Path) -> None:
    for name, text in MODEL_FILES.items():
        (d / name).write_text(text)
    (d / "model.txt").write_text(MODEL_FILES["ok.py"])
    (d / "latin1.py").write_bytes(b"# caf\xe9\nimport torch\n")
    (d / "a_folder.py").mkdir()
    (d / "a_file").write_text("not a folder")
    (d / "out_dir").mkdir()
    # profiles that are not usable profiles
    (d / "binary.json").write_bytes(bytes(range(128, 256)) * 4)
    (d / "empty.json").write_text("")
    (d / "other_tool.json").write_text(json.dumps({"name": "x", "version": 3, "devices": []}))
    (d / "a_list.json").write_text("[1, 2, 3]")
    shipped = json.loads((REPO / "device_profiles" / f"{H100}.json").read_text())
    (d / "newer.json").write_text(json.dumps({**shipped, "schema_version": shipped["schema_version"] + 1}))
    (d / "broken_fields.json").write_text(json.dumps({**shipped, "host": {"oops": 1}}))
    (d / "cpu_only.json").write_text(json.dumps({**shipped, "name": "cpu-only", "gpu": None}))
    (d / "profile_dir.json").mkdir()
    # reports that are not usable reports
    (d / "not_json_report.json").write_text("{oops")
    (d / "old_report.json").write_text(json.dumps({"schema_version": 1, "ops": [], "profile": {}, "total": {}}))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The corpus folder, and an empty saved-profile folder so that no user profile takes part."""
    d = tmp_path_factory.mktemp("corpus")
    _write_corpus(d)
    saved = tmp_path_factory.mktemp("saved_profiles")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ROOFLINE_PROFILE_DIR", str(saved))
        yield d


def _fill(argv, d: Path) -> list[str]:
    return [a.format(d=d, mlp=MLP, h100=H100) for a in argv]


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """``roofline ARGV`` in this process: (exit code, stdout, stderr). Any exception other than
    SystemExit propagates, so a traceback fails the test with that traceback."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, out.getvalue(), err.getvalue()


def assert_one_line_error(code: int, out: str, err: str, needle: str, exit_code: int = 2) -> str:
    assert "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == exit_code, f"exit {code}, stderr: {err}"
    assert len(lines) == 1, f"{len(lines)} lines on stderr:\n{err}"
    assert lines[0].startswith("roofline"), lines[0]
    assert not out.strip(), f"stdout:\n{out}"
    assert needle.lower() in lines[0].lower(), f"{needle!r} not in: {lines[0]}"
    return lines[0]


@dataclass(frozen=True)
class Case:
    id: str
    argv: tuple[str, ...]  # {d}: the corpus folder, {mlp}: examples/mlp_tiny.py, {h100}: the shipped H100 profile
    needle: str  # what the error line must say (the problem, named)


def advise(model: str, *extra: str) -> tuple[str, ...]:
    return ("advise", model, "--profile", H100, "--no-batch-sweep", *extra)


ERRORS = [
    # model files
    Case("model-missing", advise("{d}/nowhere.py"), "model file not found"),
    Case("model-path-empty", advise(""), "path is empty"),
    Case("model-is-a-directory", advise("{d}/a_folder.py"), "is a directory"),
    Case("model-not-python", advise("{d}/model.txt"), "not a Python file"),
    Case("model-not-utf8", advise("{d}/latin1.py"), "not UTF-8"),
    Case("model-empty-file", advise("{d}/empty.py"), "defines neither"),
    Case("model-syntax-error", advise("{d}/syntax.py"), "syntax.py:2: syntax error"),
    Case("model-raises-at-import", advise("{d}/raises.py"), "raises.py:2"),
    Case("model-exits-at-import", advise("{d}/exits.py"), "sys.exit(3)"),
    Case("model-missing-package", advise("{d}/needs_pkg.py"), "pip install roofline_no_such_package"),
    Case("model-defines-neither", advise("{d}/neither.py"), "defines neither"),
    Case("model-without-inputs", advise("{d}/no_inputs.py"), "not `example_inputs`"),
    Case("inputs-without-model", advise("{d}/no_model.py"), "not `model`"),
    Case("get-model-not-a-function", advise("{d}/get_not_callable.py"), "must be a function"),
    Case("get-model-raises", advise("{d}/get_model_raises.py"), "checkpoint missing"),
    Case("model-is-an-int", advise("{d}/model_int.py"), "must be an nn.Module or a callable"),
    Case("model-is-none", advise("{d}/model_none.py"), "must be an nn.Module or a callable"),
    Case("inputs-none", advise("{d}/inputs_none.py"), "must be a tuple"),
    Case("inputs-a-string", advise("{d}/inputs_str.py"), "must be a tuple"),
    Case("inputs-dict-non-name-key", advise("{d}/inputs_badkey.py"), "not an argument name"),
    Case("inputs-shape-mismatch", advise("{d}/shape_mismatch.py"), "shape_mismatch.py:7"),
    Case("inputs-too-many", advise("{d}/too_many_inputs.py"), "example_inputs do not match its arguments"),
    Case("inputs-unknown-keyword", advise("{d}/wrong_kwarg.py"), "unexpected keyword argument 'inputs'"),
    Case("inputs-wrong-dtype", advise("{d}/dtype_mismatch.py"), "dtype"),
    Case("placement-sweep-without-sweep", advise("{d}/no_sweep.py", "--placement-sweep"), "sweep()"),
    # profiles
    Case("profile-unknown-name", ("advise", "{mlp}", "--profile", "h100-typo"), "no profile named 'h100-typo'"),
    Case("profile-name-empty", ("advise", "{mlp}", "--profile", ""), "profile name is empty"),
    Case("profile-missing-path", ("advise", "{mlp}", "--profile", "{d}/nowhere.json"), "does not exist"),
    Case("profile-binary", ("advise", "{mlp}", "--profile", "{d}/binary.json"), "not a roofline device profile"),
    Case("profile-empty", ("advise", "{mlp}", "--profile", "{d}/empty.json"), "empty"),
    Case("profile-other-tool", ("advise", "{mlp}", "--profile", "{d}/other_tool.json"), "not a roofline device profile"),
    Case("profile-a-list", ("advise", "{mlp}", "--profile", "{d}/a_list.json"), "not a roofline device profile"),
    Case("profile-newer-schema", ("advise", "{mlp}", "--profile", "{d}/newer.json"), "schema_version"),
    Case("profile-invalid-fields", ("advise", "{mlp}", "--profile", "{d}/broken_fields.json"), "invalid"),
    Case("profile-a-directory", ("advise", "{mlp}", "--profile", "{d}/profile_dir.json"), "is a directory, not a profile file"),
    Case("profile-a-model-file", ("advise", "{mlp}", "--profile", "{mlp}"), "the model file comes first"),
    # devices
    Case("device-unknown", ("advise", "{mlp}", "--profile", H100, "--device", "tpu"), "invalid choice: 'tpu'"),
    Case("device-gpu-of-a-cpu-profile", ("advise", "{mlp}", "--profile", "{d}/cpu_only.json", "--device", "cuda"), "no GPU part"),
    Case("measure-gpu-profile-without-gpu", ("advise", "{mlp}", "--profile", H100, "--measure"), "no CUDA device"),
    Case("bench-kernels-without-gpu", ("advise", "{mlp}", "--profile", H100, "--bench-kernels"), "no CUDA device"),
    Case("measure-cpu-of-another-machine", ("advise", "{mlp}", "--profile", H100, "--device", "cpu", "--measure"), "calibrate --device cpu"),
    Case("calibrate-cuda-without-gpu", ("calibrate", "--device", "cuda", "--quick"), "cuda"),
    Case("calibrate-device-unknown", ("calibrate", "--device", "tpu", "--quick"), "tpu"),
    Case("calibrate-for-without-gpu", ("calibrate", "--for", "{d}/raises.py", "--profile", H100), "no CUDA device"),
    Case("calibrate-for-missing-model", ("calibrate", "--for", "{d}/nowhere.py", "--profile", H100), "model file not found"),
    Case("calibrate-for-unknown-profile", ("calibrate", "--for", "{mlp}", "--profile", "h100-typo"), "no profile named"),
    # output paths, refused before any work
    Case("json-unwritable", ("advise", "{mlp}", "--profile", H100, "--json", "/proc/roofline-report.json"), "cannot write"),
    Case("json-folder-missing", ("advise", "{mlp}", "--profile", H100, "--json", "{d}/no/such/folder/r.json"), "cannot write"),
    Case("json-under-a-file", ("advise", "{mlp}", "--profile", H100, "--json", "{d}/a_file/r.json"), "a_file is a file, not a folder"),
    Case("json-a-directory", ("advise", "{mlp}", "--profile", H100, "--json", "{d}/out_dir"), "is a directory"),
    Case("trace-unwritable", ("advise", "{mlp}", "--profile", H100, "--trace", "/proc/roofline-trace.json"), "cannot write"),
    Case("plot-unwritable", ("advise", "{mlp}", "--profile", H100, "--plot", "/proc/roofline.png"), "cannot write"),
    Case("plot-bad-extension", ("advise", "{mlp}", "--profile", H100, "--plot", "{d}/chart.pdf"), ".png or .svg"),
    Case("plot-html", ("advise", "{mlp}", "--profile", H100, "--plot", "{d}/chart.html"), "--report"),
    Case("report-not-html", ("advise", "{mlp}", "--profile", H100, "--report", "{d}/page.txt"), ".html"),
    Case("report-unwritable", ("advise", "{mlp}", "--profile", H100, "--report", "/proc/roofline.html"), "cannot write"),
    Case("calibrate-output-unwritable", ("calibrate", "--device", "cpu", "--quick", "--output", "/proc/roofline-profile.json"), "cannot write profile"),
    Case("calibrate-output-under-a-file", ("calibrate", "--device", "cpu", "--quick", "--output", "{d}/a_file/p.json"), "a_file is a file, not a folder"),
    Case("calibrate-output-a-directory", ("calibrate", "--device", "cpu", "--quick", "--output", "{d}/out_dir"), "is a directory"),
    # numbers
    Case("calls-zero", ("advise", "{mlp}", "--profile", H100, "--calls", "0"), "give 1 or more"),
    Case("calls-negative", ("advise", "{mlp}", "--profile", H100, "--calls", "-3"), "give 1 or more"),
    Case("calls-not-a-number", ("advise", "{mlp}", "--profile", H100, "--calls", "many"), "not a whole number"),
    Case("top-zero", ("advise", "{mlp}", "--profile", H100, "--top", "0"), "give 1 or more"),
    Case("decode-zero", ("advise", "{mlp}", "--profile", H100, "--decode", "0"), "give 1 or more"),
    Case("decode-on-a-non-lm", advise("{mlp}", "--decode", "4"), "decode"),
    Case("train-without-parameters", advise("{d}/no_params.py", "--train"), "no parameter that requires grad"),
    Case("optimizer-without-train", advise("{mlp}", "--optimizer", "sgd"), "add --train or drop --optimizer"),
    Case("loss-without-train", advise("{mlp}", "--loss", "sum"), "add --train or drop --loss"),
    Case("optimizer-unknown", advise("{mlp}", "--train", "--optimizer", "lion"), "invalid choice: 'lion'"),
    Case("train-and-decode", advise("{mlp}", "--train", "--decode", "4"), "run them separately"),
    # roofline plot
    Case("plot-missing-report", ("plot", "{d}/nowhere.json"), "does not exist"),
    Case("plot-report-not-json", ("plot", "{d}/not_json_report.json"), "not valid JSON"),
    Case("plot-report-binary", ("plot", "{d}/binary.json"), "not a roofline report (a binary file"),
    Case("plot-a-profile", ("plot", "{d}/newer.json"), "is a device profile"),
    Case("plot-other-json", ("plot", "{d}/other_tool.json"), "not a roofline report"),
    Case("plot-old-report", ("plot", "{d}/old_report.json"), "schema_version"),
    Case("plot-a-directory", ("plot", "{d}/out_dir"), "is a directory, not a report"),
    Case("plot-chart-unknown", ("plot", "{d}/old_report.json", "--chart", "pie"), "invalid choice"),
    # the command line itself
    Case("unknown-subcommand", ("analyse", "{mlp}"), "invalid choice: 'analyse'"),
    Case("unknown-flag", ("advise", "{mlp}", "--profile", H100, "--fast"), "unrecognized arguments: --fast"),
    Case("advise-without-model", ("advise",), "model_file"),
    Case("copies-unknown", ("advise", "{mlp}", "--copies", "twice"), "invalid choice"),
    Case("profiles-extra-argument", ("profiles", "everything"), "unrecognized arguments: everything"),
    Case("plot-without-report", ("plot",), "required: report_json"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[c.id for c in ERRORS])
def test_bad_input_is_one_line_and_exit_2(case, corpus):
    if case.id.startswith(("calibrate-cuda", "measure-gpu", "bench-kernels", "calibrate-for-without")) and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert_one_line_error(*run_main(_fill(case.argv, corpus)), case.needle)


def test_the_corpus_is_large_enough():
    assert len(ERRORS) >= 40 and len({c.id for c in ERRORS}) == len(ERRORS)


# ------------------------------------------------------------------------------------------------
# unusual but valid: each must succeed, with the ops its model runs (not merely exit 0)


def _advise_json(corpus, tmp_path, model: str) -> tuple[dict, str]:
    out = tmp_path / "report.json"
    code, stdout, stderr = run_main(["advise", str(corpus / model), "--profile", H100, "--no-batch-sweep", "--json", str(out)])
    assert code == 0 and "Traceback" not in stdout + stderr, stderr
    return json.loads(out.read_text()), stdout


def _ops(report: dict) -> list[str]:
    return [op["target"].split(".")[1] for op in report["ops"]]


@pytest.mark.parametrize(
    "model, expected_ops, flops",
    [
        ("no_params.py", ["sin", "mul"], None),  # no parameters at all
        ("dict_input.py", ["addmm", "mul"], 2 * 4 * 8 * 8 + 4 * 8),  # keyword inputs
        ("int_input.py", ["addmm"] * 3, 3 * 2 * 4 * 8 * 8),  # an int input: forward's loop runs 3 times
        ("dataclass_out.py", ["addmm", "_softmax"], None),  # returns a dataclass
        ("bare_tensor.py", ["addmm"], 2 * 2 * 8 * 8),  # one tensor, not a tuple: the single positional input
        ("function_model.py", ["mm"], 2 * 16 * 32 * 8),  # a plain function
    ],
)
def test_unusual_but_valid_input_is_analyzed(corpus, tmp_path, model, expected_ops, flops):
    report, _ = _advise_json(corpus, tmp_path, model)
    ops = [op for op in _ops(report) if op not in ("t", "view", "_to_copy", "expand", "detach", "alias")]
    assert ops == expected_ops, _ops(report)
    if flops is not None:
        assert report["total"]["flops"] == flops


@pytest.mark.parametrize("model, what", [("big_item.py", ".item()"), ("big_mask.py", "boolean-mask")])
def test_a_model_that_reads_tensor_values_is_captured_on_real_tensors_and_says_so(corpus, tmp_path, model, what):
    # fake tensors have no values: capture falls back to one real CPU run, and the report says so,
    # and that a CUDA graph cannot hold the host's read
    report, stdout = _advise_json(corpus, tmp_path, model)
    assert report["capture_mode"] == "real"
    assert any("real CPU tensors" in w for w in report["warnings"]), report["warnings"]
    graph_plan = next(p for p in report["plans"] if p["execution"] == "cuda_graphs" and p["device"] == "cuda")
    assert not graph_plan["applicable"] and what in graph_plan["reason"], graph_plan


def test_the_terminal_shows_the_source_line_as_written(corpus, tmp_path):
    _, stdout = _advise_json(corpus, tmp_path, "big_mask.py")
    assert "y[y > 0].sum()" in stdout


# ------------------------------------------------------------------------------------------------
# through `python -m roofline`, as a user runs it


def run_roofline(*argv: str, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "roofline", *argv], capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})}, cwd=cwd or REPO,
    )


@pytest.mark.parametrize(
    "argv, needle",
    [
        (("advise", "nowhere.py", "--profile", H100), "model file not found"),
        (("advise", "{d}/shape_mismatch.py", "--profile", H100, "--no-batch-sweep"), "shape_mismatch.py:7"),
        (("advize", "{d}/ok.py"), "invalid choice: 'advize'"),
    ],
    ids=["missing-model", "shape-mismatch", "unknown-subcommand"],
)
def test_bad_input_through_the_real_entry_point(corpus, argv, needle):
    proc = run_roofline(*_fill(argv, corpus), cwd=corpus)
    assert_one_line_error(proc.returncode, proc.stdout, proc.stderr, needle)


@pytest.mark.parametrize("model", ["slow_import.py", "slow_forward.py"])
def test_ctrl_c_is_one_line_and_exit_130(corpus, tmp_path, model):
    """SIGINT while the model file runs (at import, then inside forward during capture)."""
    marker = tmp_path / "reached"
    proc = subprocess.Popen(
        [sys.executable, "-m", "roofline", "advise", str(corpus / model), "--profile", H100, "--no-batch-sweep"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "ROOFLINE_TEST_MARKER": str(marker)},
        # as a user's terminal starts it: a suite started in the background has SIGINT ignored, which a child inherits
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 90
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the model file never reached its slow part"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_one_line_error(proc.returncode, out, err, "roofline: interrupted", exit_code=130)
