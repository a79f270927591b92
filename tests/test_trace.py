"""--trace writes the predicted timeline in the Chrome trace format that Perfetto and
chrome://tracing open."""

from __future__ import annotations

import json

import pytest
import torch

import roofline
from roofline.report.trace import trace_events, write_trace
from tests.conftest import REPO, run_cli


def _check_format(events: list[dict]) -> None:
    for e in events:
        assert {"ph", "ts", "dur", "pid", "tid"} <= set(e), e
        assert e["ph"] in ("X", "M") and isinstance(e["ts"], (int, float)) and e["dur"] >= 0 and e["ts"] >= 0
    json.dumps(events)


def test_cli_trace_has_named_lanes_and_an_event_per_op(tmp_path):
    out, report_json = tmp_path / "t.json", tmp_path / "r.json"
    proc = run_cli("advise", str(REPO / "examples" / "gpt_block.py"), "--profile", "nvidia-h100-80gb-hbm3", "--no-batch-sweep",
                   "--trace", str(out), "--json", str(report_json))
    assert proc.returncode == 0, proc.stderr
    events = json.loads(out.read_text())["traceEvents"]
    _check_format(events)
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert len(lanes) >= 2
    report = json.loads(report_json.read_text())
    host = [e for e in events if e["ph"] == "X" and e["cat"] == "host"]
    assert [e["args"]["index"] for e in host] == [op["index"] for op in report["ops"]]  # one per op, in order
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    assert len(kernels) == sum(1 for op in report["ops"] if op["kernels"])
    last = max(e["ts"] + e["dur"] for e in kernels)
    assert last == pytest.approx(report["total"]["predicted_s"] * 1e6, rel=0.05)  # the device lane ends with the run (less the sync)
    # µs: a kernel's duration is its predicted kernel time
    by_index = {op["index"]: op for op in report["ops"]}
    assert all(e["dur"] == pytest.approx(by_index[e["args"]["index"]]["kernel_s"] * 1e6) for e in kernels)


def test_measured_lane_and_cpu_lane(tmp_path):
    report = roofline.analyze(torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.ReLU()), (torch.randn(4, 32),),
                              profile="nvidia-h100-80gb-hbm3", batch_sweep=False)
    for op in report.ops:
        if op.kernels:
            op.measured_s = 2 * op.kernel_s
    events = trace_events(report)
    _check_format(events)
    measured = [e for e in events if e.get("cat") == "measured"]
    assert len(measured) == sum(1 for op in report.ops if op.kernels)
    assert all(b["ts"] == pytest.approx(a["ts"] + a["dur"]) for a, b in zip(measured, measured[1:]))  # back to back
    cpu = roofline.analyze(torch.nn.Linear(32, 32), (torch.randn(4, 32),), profile="nvidia-h100-80gb-hbm3", device="cpu", batch_sweep=False)
    events = trace_events(cpu)
    assert {e["tid"] for e in events if e["ph"] == "X"} == {1} and len([e for e in events if e["ph"] == "X"]) == len(cpu.ops)
    write_trace(cpu, tmp_path / "cpu.json")
    _check_format(json.loads((tmp_path / "cpu.json").read_text())["traceEvents"])
