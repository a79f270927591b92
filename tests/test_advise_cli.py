"""`roofline advise` end to end on the CPU: the JSON contract, the shipped profile, clear errors."""

import json

import pytest

from tests.conftest import REPO, run_cli

CONTRACT_OPS = {"index", "target", "module", "flops", "bytes_read", "bytes_written", "kernel_s", "host_s", "predicted_s", "regime", "measured_s"}
CONTRACT_TOTAL = {"predicted_s", "measured_s", "flops", "bytes", "kernels"}
CONTRACT_PLACEMENT = {"recommended", "cpu_s", "gpu_s", "transfer_s"}


@pytest.mark.parametrize("example", ["mlp_tiny.py", "gpt_block.py", "seed000_nested_sin.py"])
def test_json_report_has_every_contract_field(tmp_path, example):
    out = tmp_path / "r.json"
    proc = run_cli("advise", str(REPO / "examples" / example), "--profile", "nvidia-h100-80gb-hbm3", "--json", str(out), "--no-batch-sweep")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert r["schema_version"] == 2
    assert {"name", "device"} <= set(r["profile"])
    assert r["ops"] and all(CONTRACT_OPS <= set(op) for op in r["ops"])
    assert CONTRACT_TOTAL <= set(r["total"])
    assert CONTRACT_PLACEMENT <= set(r["placement"])
    assert isinstance(r["fusion"], list) and all({"ops", "predicted_gain_s"} <= set(f) for f in r["fusion"])
    assert isinstance(r["unsupported_ops"], dict)
    assert all(op["regime"] in ("compute", "memory", "overhead", "none") for op in r["ops"])
    assert r["total"]["measured_s"] is None
    # the per-op contributions add up to the timeline's end (less the final synchronize)
    assert sum(op["predicted_s"] for op in r["ops"]) <= r["total"]["predicted_s"] * (1 + 1e-9)
    assert "H100" in r["profile"]["device"]


def test_terminal_output_sections():
    proc = run_cli("advise", str(REPO / "examples" / "mlp_tiny.py"), "--profile", "nvidia-h100-80gb-hbm3")
    assert proc.returncode == 0, proc.stderr
    for needle in ("predicted", "time by regime", "top", "by module", "advice", "plan:", "runners-up:", "batch sweep"):
        assert needle in proc.stdout, needle


def _one_line_error(proc, *needles):
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    for n in needles:
        assert n in err, err


def test_model_file_without_expected_names(tmp_path):
    f = tmp_path / "bad.py"
    f.write_text("import torch\nnet = torch.nn.Linear(2, 2)\n")
    _one_line_error(run_cli("advise", str(f), "--profile", "nvidia-h100-80gb-hbm3"), "get_model")


def test_missing_model_file():
    _one_line_error(run_cli("advise", "/nonexistent/model.py", "--profile", "nvidia-h100-80gb-hbm3"), "model.py")


def test_model_that_fails_in_forward_names_the_line(tmp_path):
    f = tmp_path / "broken.py"
    f.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x @ torch.ones(3, 3)\n"
        "model = M()\n"
        "example_inputs = (torch.ones(2, 5),)\n"
    )
    _one_line_error(run_cli("advise", str(f), "--profile", "nvidia-h100-80gb-hbm3"), "broken.py:4")


def test_corrupt_profile_path(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text("{oops")
    _one_line_error(run_cli("advise", str(REPO / "examples" / "mlp_tiny.py"), "--profile", str(bad)), "corrupt")


def test_measure_refuses_a_profile_of_another_machine():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    _one_line_error(run_cli("advise", str(REPO / "examples" / "mlp_tiny.py"), "--profile", "nvidia-h100-80gb-hbm3", "--measure"), "no CUDA device")


def test_host_now_refuses_a_profile_of_another_machine_before_any_work(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    # a model file that fails when loaded: the refusal comes first, before the file runs
    f = tmp_path / "loud.py"
    f.write_text("raise RuntimeError('the model file ran')\n")
    _one_line_error(run_cli("advise", str(f), "--profile", "nvidia-h100-80gb-hbm3", "--host", "now"), "--host now")


def test_host_now_on_the_profiled_machine_says_so(tmp_path, cpu_quick_profile_path):
    out = tmp_path / "r.json"
    proc = run_cli("advise", str(REPO / "examples" / "mlp_tiny.py"), "--profile", str(cpu_quick_profile_path), "--device", "cpu",
                   "--host", "now", "--json", str(out), "--no-batch-sweep")
    assert proc.returncode == 0, proc.stderr
    assert "the host's speed read here now" in proc.stdout
    assert 0.2 <= json.loads(out.read_text())["profile"]["host_scale_read"] <= 5.0
    # by default, the profile's host level
    proc = run_cli("advise", str(REPO / "examples" / "mlp_tiny.py"), "--profile", str(cpu_quick_profile_path), "--device", "cpu",
                   "--json", str(out), "--no-batch-sweep")
    assert proc.returncode == 0 and json.loads(out.read_text())["profile"]["host_scale_read"] is None


def test_unsupported_op_is_listed_not_zero(tmp_path):
    # aten.nextafter has no formula: it must be listed by name and still cost its bytes
    from roofline.costs import registered_ops

    assert "aten.nextafter" not in registered_ops(), "nextafter gained a formula: pick an op without one for this test"
    f = tmp_path / "odd.py"
    f.write_text("import torch\ndef get_model():\n    return lambda x: torch.nextafter(x, x * 0)\ndef get_example_inputs():\n    return (torch.randn(1024),)\n")
    out = tmp_path / "r.json"
    proc = run_cli("advise", str(f), "--profile", "nvidia-h100-80gb-hbm3", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert r["unsupported_ops"] == {"aten.nextafter.default": 1} and "nextafter" in proc.stdout
    op = next(o for o in r["ops"] if o["target"] == "aten.nextafter.default")
    # two float32 inputs of 1024 read (8192 B), one output written (4096 B), no FLOPs claimed
    assert op["bytes_read"] == 8192 and op["bytes_written"] == 4096 and op["flops"] == 0 and not op["supported"]


def test_an_advise_run_imports_no_calibration_and_no_scipy():
    # the prediction path stands on roofline alone: calibrate/ is an instrument beside it
    code = (
        "import sys\n"
        "from roofline.cli import main\n"
        f"main(['advise', {str(REPO / 'examples' / 'mlp_tiny.py')!r}, '--profile', 'nvidia-h100-80gb-hbm3', '--json', '/dev/null'])\n"
        "print('LOADED', sorted(m for m in sys.modules if m == 'calibrate' or m.startswith(('calibrate.', 'scipy'))))\n"
    )
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "LOADED []"


def test_binary_profile_file_is_one_line(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_bytes(bytes(range(128, 256)))
    _one_line_error(run_cli("advise", str(REPO / "examples" / "mlp_tiny.py"), "--profile", str(bad)), "not a roofline device profile")


def test_no_arguments_print_the_help():
    proc = run_cli()
    assert proc.returncode == 0 and proc.stdout.startswith("usage: roofline")
    for command in ("calibrate", "profiles", "advise", "plot"):
        assert command in proc.stdout
