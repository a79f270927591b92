"""The model's own times: end to end, and op by op.

- End to end: the eager forward, inputs already on the device, one call plus synchronize, timed by
  the shared protocol (``roofline.timing``) after warm-up, in rounds beside the host-speed index when
  the profile recorded it. This is what ``total.predicted_s`` predicts.
- Per op: the captured ops are replayed on real tensors (``roofline.graph.replay``) under
  ``torch.profiler``; each replayed op is one top-level aten event, so profiler times map back to the
  captured ops by order. On a GPU an op's time is the device time of the kernels it launched (what
  ``kernel_s`` predicts); on the CPU it is the op's wall time (what ``predicted_s`` predicts).

Order matters on a GPU: after a torch.profiler session with CUDA activities, Kineto leaves CUPTI
subscribed (unless TEARDOWN_CUPTI=1; pytorch/pytorch#144455), and its callbacks slow every later
launch from this process. So every end-to-end and alternative timing comes first, and per-op
profiling last (``measure(per_op=False)``, then ``add_per_op``).
"""

from __future__ import annotations

import os
import statistics
import sys
from dataclasses import dataclass, field

import torch

from roofline.graph.ops import CapturedGraph
from roofline.graph.provenance import named_state
from roofline.graph.replay import bind, replay
from roofline.graph.structure import map_tensors
from roofline.measure.host_speed import HostSpeed, host_speed_beside, warm_up
from roofline.schema.profile import Overheads
from roofline.timing import Timing, sync, time_fn


@dataclass
class Measurement:
    total: Timing
    op_s: list[float | None]  # per captured op; None where no event matched
    profiled_runs: int
    notes: list[str] = field(default_factory=list)
    host_speed: HostSpeed | None = None  # the host-speed index timed beside the total, when it was


def on_device(model, args: tuple, kwargs: dict, device: str):
    """The model in eval mode and its inputs, moved to ``device``."""
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    move = lambda t: t.to(device)  # noqa: E731
    return model, map_tensors(args, move), map_tensors(kwargs, move)


def measure_total(model, args: tuple, kwargs: dict, device: str, *, budget_s: float = 1.0) -> Timing:
    """Eager forward plus synchronize, after warm-up: the quantity ``total.predicted_s`` predicts."""

    def call():
        model(*args, **kwargs)
        sync(device)

    with torch.no_grad():
        return time_fn(call, device=device, clock="host", inner=1, budget_s=budget_s, warmup_budget_s=0.5, min_samples=10, label="forward")


def measure(
    graph: CapturedGraph, model, args: tuple, kwargs: dict, device: str, *, budget_s: float = 1.0, runs: int = 5, per_op: bool = True,
    overheads: Overheads | None = None,
) -> Measurement:
    """Move a real model and inputs to ``device``, then measure the total and (``per_op``) the per-op
    times. Pass ``per_op=False`` when more timings follow in this process, and call ``add_per_op``
    after the last of them (see the module docstring). With the profile's ``overheads``, the total
    is timed beside the host-speed index, which ``Measurement.host_speed`` then holds."""
    model, args, kwargs = on_device(model, args, kwargs, device)
    speed = None
    if overheads is not None and overheads.dispatch_by_op_s:

        def call():
            model(*args, **kwargs)
            sync(device)

        with torch.no_grad():
            warm_up(call)
        total, speed = host_speed_beside(call, device, overheads, budget_s=budget_s)
    else:
        total = measure_total(model, args, kwargs, device, budget_s=budget_s)
    measurement = Measurement(
        total=total, op_s=[None] * len(graph.ops), profiled_runs=0, notes=[total.warning] if total.warning else [], host_speed=speed
    )
    if per_op:
        add_per_op(measurement, graph, model, args, kwargs, device, runs=runs)
    return measurement


class _quiet_native_stderr:
    """Point file descriptor 2 at /dev/null for a moment: silences native libraries' prints, which
    Python's sys.stderr redirection cannot reach. Python exceptions still propagate."""

    def __enter__(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(self._null, 2)

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        os.close(self._null)


def _event_time_us(evt, device: str) -> float:
    if device.startswith("cuda"):
        for attr in ("device_time_total", "cuda_time_total"):
            if hasattr(evt, attr):
                return float(getattr(evt, attr))
        return 0.0
    return float(evt.cpu_time_total)


def measure_ops(graph: CapturedGraph, values: dict, device: str, *, runs: int = 5) -> tuple[list[float | None], list[str]]:
    """Per-op times (seconds) from the profiler over ``runs`` replays of the captured ops, starting
    from ``values`` (``roofline.graph.replay.bind``)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch.no_grad():
        for _ in range(3):
            replay(graph, values)
        sync(device)
        prof = profile(activities=activities)
        with _quiet_native_stderr():  # the profiler's C++ side prints start/stop lines
            prof.start()
        try:
            for _ in range(runs):
                replay(graph, values)
                sync(device)
        finally:
            with _quiet_native_stderr():
                prof.stop()
    events = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    expected = [f"{op.target.namespace}::{op.target._opname}" if hasattr(op.target, "_opname") else "" for op in graph.ops]
    per_op: list[list[float]] = [[] for _ in graph.ops]
    notes: list[str] = []
    i = 0
    unmatched = 0
    for evt in events:
        # walk the expected sequence (wrapping at each run); events that match nothing are skipped
        for step in range(len(expected)):
            j = (i + step) % len(expected)
            if expected[j] == evt.name:
                per_op[j].append(_event_time_us(evt, device) * 1e-6)
                i = (j + 1) % len(expected)
                break
        else:
            unmatched += 1
    if unmatched:
        notes.append(f"{unmatched} profiler events matched no captured op")
    times = [statistics.median(t) if t else None for t in per_op]
    missing = sum(1 for t in times if t is None)
    if missing:
        notes.append(f"{missing} captured ops had no profiler event")
    return times, notes


def add_per_op(measurement: Measurement, graph: CapturedGraph, model, args: tuple, kwargs: dict, device: str, *, runs: int = 5) -> Measurement:
    """Fill ``measurement.op_s`` by profiling ``runs`` replays of the captured ops."""
    model, args, kwargs = on_device(model, args, kwargs, device)
    state = dict(named_state(model)) if isinstance(model, torch.nn.Module) else {}
    if graph.replay is None or not graph.ops:
        op_s, notes = [None] * len(graph.ops), ["no captured ops to replay: per-op times not measured"]
    else:
        try:
            op_s, notes = measure_ops(graph, bind(graph, state, args, kwargs, device), device, runs=runs)
        except Exception as e:  # a graph that cannot be replayed still leaves the end-to-end figure
            op_s, notes = [None] * len(graph.ops), [f"per-op replay failed ({type(e).__name__}: {str(e).splitlines()[0][:160]})"]
    measurement.op_s = op_s
    measurement.profiled_runs = runs
    measurement.notes = notes + measurement.notes
    return measurement


def roofline_time_s(flops: int, nbytes: int, peak_flop_per_s: float, peak_bytes_per_s: float) -> float:
    """The roof: the least time the op could take at the device's best measured rates."""
    return max(flops / peak_flop_per_s if peak_flop_per_s else 0.0, nbytes / peak_bytes_per_s if peak_bytes_per_s else 0.0)
