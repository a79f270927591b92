"""The context-manager API, DataFrames and the notebook view."""

from __future__ import annotations

import json
import runpy

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import roofline
from roofline.errors import CaptureError, RooflineError
from tests.conftest import REPO, run_cli

PROFILE = "nvidia-h100-80gb-hbm3"


def _gpt_block_fake():
    ns = runpy.run_path(str(REPO / "examples" / "gpt_block.py"))
    with FakeTensorMode():
        return ns["get_model"]().eval(), ns["get_example_inputs"]()


def test_advisor_around_a_transformer_block_equals_the_cli(tmp_path):
    model, inputs = _gpt_block_fake()
    with torch.no_grad(), roofline.Advisor(profile=PROFILE) as adv:
        model(*inputs)
    report = adv.report
    out = tmp_path / "cli.json"
    proc = run_cli("advise", str(REPO / "examples" / "gpt_block.py"), "--profile", PROFILE, "--no-batch-sweep", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    cli = json.loads(out.read_text())
    assert report.total.predicted_s == pytest.approx(cli["total"]["predicted_s"], rel=1e-9)
    assert [op.target for op in report.ops] == [op["target"] for op in cli["ops"]]
    assert [m.module for m in report.modules] == [m["module"] for m in cli["modules"]]  # submodules named as the CLI names them
    assert report.placement.transfer_s == pytest.approx(cli["placement"]["transfer_s"], rel=1e-9)  # inputs found, weights resident


def test_real_tensors_run_for_real_and_functions_work():
    x = torch.ones(8, 8)
    with roofline.Advisor(profile=PROFILE, device="cpu") as adv:
        y = torch.relu(x @ x) + 1  # any torch code, no module
    assert y[0, 0].item() == 9.0  # the block really ran
    report = adv.report
    assert report.capture_mode == "real" and [op.target for op in report.ops] == ["aten.mm.default", "aten.relu.default", "aten.add.Tensor"]
    assert report.profile.kind == "cpu"


def test_meta_tensors_are_priced_with_a_warning():
    with torch.device("meta"):
        m = torch.nn.Linear(32, 32)
        x = torch.empty(4, 32)
    with roofline.Advisor(profile=PROFILE) as adv:
        m(x)
    assert adv.report.capture_mode == "fake" and any("meta tensors" in w for w in adv.report.warnings)


def test_nothing_is_analyzed_when_the_block_raises_or_runs_nothing():
    adv = roofline.Advisor(profile=PROFILE)
    with pytest.raises(ValueError):
        with adv:
            torch.ones(2) + 1
            raise ValueError("user error")
    with pytest.raises(RuntimeError, match="after the `with` block"):
        adv.report
    with pytest.raises(CaptureError, match="nothing ran"):
        with roofline.Advisor(profile=PROFILE):
            pass


def test_frames_have_one_row_per_op_and_module():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
    report = roofline.analyze(model, (torch.randn(4, 64),), profile=PROFILE, batch_sweep=False)
    ops = report.ops_frame()
    assert len(ops) == len(report.ops) and list(ops["target"]) == [op.target for op in report.ops]
    assert {"predicted_s", "regime", "input_shapes", "dtype"} <= set(ops.columns)
    assert ops["predicted_s"].sum() == pytest.approx(sum(op.predicted_s for op in report.ops))
    mods = report.modules_frame()
    assert len(mods) == len(report.modules) and {"compute_s", "memory_s", "overhead_s"} <= set(mods.columns)


def test_frames_without_pandas_say_how_to_get_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name == "pandas":
            raise ImportError("no pandas")
        return real_import(name, *args, **kwargs)

    report = roofline.analyze(torch.nn.Linear(8, 8), (torch.randn(2, 8),), profile=PROFILE, batch_sweep=False)
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(RooflineError, match=r"pip install 'roofline\[frames\]'"):
        report.ops_frame()


def test_notebook_view_has_a_table_and_an_image():
    report = roofline.analyze(torch.nn.Linear(64, 64), (torch.randn(4, 64),), profile=PROFILE, batch_sweep=False)
    page = report._repr_html_()
    assert "<table" in page and "<img" in page and "data:image/png;base64," in page
    assert "plan: <b>" in page
