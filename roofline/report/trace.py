"""The predicted eager timeline in the Chrome trace format, for Perfetto and chrome://tracing.

One process per report; lanes (threads) named by metadata events: the host issuing each op, and on a
GPU the device running its kernels. With ``--measure``, a lane of the measured kernel times, laid
back to back from the first kernel's predicted start: the per-op replay measures each kernel's
duration, not when it started, so that lane shows durations and order, not measured gaps. Every
event is a complete event (``ph: "X"``) with ``ts`` and ``dur`` in microseconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from roofline.errors import RooflineError
from roofline.schema.report import Report

PID = 1
HOST_TID, DEVICE_TID, MEASURED_TID = 1, 2, 3


def _meta(name: str, tid: int, value: str) -> dict:
    return {"ph": "M", "name": name, "pid": PID, "tid": tid, "ts": 0, "dur": 0, "args": {"name": value}}


def _op_args(op) -> dict:
    return {
        "index": op.index, "module": op.module, "source": op.source, "flops": op.flops, "bytes": op.bytes_read + op.bytes_written,
        "regime": op.regime, "kernel_us": op.kernel_s * 1e6, "host_us": op.host_s * 1e6,
    }


def trace_events(report: Report) -> list[dict]:
    """The trace's events: lane names, then one host event per op, one device event per op with a
    kernel, and the measured kernels when the report has them."""
    gpu = report.profile.kind == "cuda"
    events = [
        _meta("process_name", HOST_TID, f"roofline: {report.model} on {report.profile.device} (predicted, eager)"),
        _meta("thread_name", HOST_TID, "host: issues each op" if gpu else "CPU: each op (host and kernel)"),
    ]
    if gpu:
        events.append(_meta("thread_name", DEVICE_TID, "GPU: kernels (predicted)"))
    for op in report.ops:
        name = op.target.removeprefix("aten.")
        if gpu:
            events.append({"ph": "X", "name": name, "cat": "host", "pid": PID, "tid": HOST_TID,
                           "ts": (op.issue_s - op.host_s) * 1e6, "dur": op.host_s * 1e6, "args": _op_args(op)})
            if op.kernels:
                events.append({"ph": "X", "name": name, "cat": "kernel", "pid": PID, "tid": DEVICE_TID,
                               "ts": op.start_s * 1e6, "dur": op.kernel_s * 1e6, "args": _op_args(op)})
        else:
            events.append({"ph": "X", "name": name, "cat": "op", "pid": PID, "tid": HOST_TID,
                           "ts": (op.issue_s - op.host_s) * 1e6, "dur": (op.host_s + op.kernel_s) * 1e6, "args": _op_args(op)})
    measured = [op for op in report.ops if op.measured_s is not None and (op.kernels or not gpu)]
    if measured:
        events.append(_meta("thread_name", MEASURED_TID, "measured: kernel durations, back to back from the first op"))
        t_us = min(op.start_s for op in measured) * 1e6
        for op in measured:
            events.append({"ph": "X", "name": op.target.removeprefix("aten."), "cat": "measured", "pid": PID, "tid": MEASURED_TID,
                           "ts": t_us, "dur": op.measured_s * 1e6, "args": {"index": op.index, "predicted_us": op.kernel_s * 1e6}})
            t_us += op.measured_s * 1e6
    return events


def write_trace(report: Report, path) -> None:
    """Write the trace to ``path`` (JSON object format: ``{"traceEvents": [...]}``)."""
    data = {"traceEvents": trace_events(report), "displayTimeUnit": "ns"}
    try:
        Path(path).write_text(json.dumps(data))
    except OSError as e:
        raise RooflineError(f"cannot write the trace to {path}: {e.strerror or e}; choose another --trace path") from None
