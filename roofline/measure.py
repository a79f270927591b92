"""``--measure``: run the model on the profile's device and put measured times beside predicted ones.

- End to end: the eager forward, inputs already on the device, one call plus synchronize, timed by
  the shared protocol (``roofline.timing``) after warm-up. This is what ``total.predicted_s`` predicts.
- Per op: the captured aten graph is replayed on real tensors under ``torch.profiler``; each graph
  node is one top-level aten event, so profiler times map back to the captured ops by order. On a GPU
  an op's time is the device time of the kernels it launched (what ``kernel_s`` predicts); on the CPU
  it is the op's wall time (what ``predicted_s`` predicts).

Order matters on a GPU: after a torch.profiler session with CUDA activities, Kineto leaves CUPTI
subscribed (unless TEARDOWN_CUPTI=1; pytorch/pytorch#144455), and its callbacks slow every later
launch from this process (``benchmarks/host_state_probe.py`` measures by how much). So every
end-to-end and alternative timing comes first, and per-op profiling last (``measure(per_op=False)``
then ``add_per_op``).

A profile measured on another machine is refused: comparing its predictions with this machine's
timings would measure the difference between the machines, not the model.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import torch
from torch.utils import _pytree as pytree

from roofline.errors import DeviceNotAvailable, ProfileError
from roofline.host_speed import HostSpeed, calibrated_index_s, host_speed_beside, index_call, index_sample_s
from roofline.ops import CapturedGraph
from roofline.profile import DeviceProfile, Overheads
from roofline.timing import Timing, _sync, time_fn


def device_for(profile: DeviceProfile, kind: str) -> str:
    """The torch device to measure on, after checking this machine is the profile's machine."""
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise DeviceNotAvailable(
                f"--measure needs the profile's GPU ({profile.gpu.identity.name}) but torch sees no CUDA device here; "
                "drop --measure to predict only, or run on that machine"
            )
        want = profile.gpu.identity.name
        for index in range(torch.cuda.device_count()):
            if torch.cuda.get_device_name(index) == want:
                return f"cuda:{index}"
        here = torch.cuda.get_device_name(0)
        raise ProfileError(
            f"--measure: profile '{profile.name}' describes a {want} but this machine has a {here}; "
            "calibrate this machine (`roofline calibrate`) and use its profile"
        )
    from calibrate.identity import cpu_identity

    here = cpu_identity(torch.get_num_threads())
    want = profile.host.identity
    if here.model != want.model or here.logical_cpus != want.logical_cpus:
        raise ProfileError(
            f"--measure: profile '{profile.name}' describes a CPU '{want.model}' with {want.logical_cpus} CPUs but this "
            f"machine has '{here.model}' with {here.logical_cpus}; run `roofline calibrate --device cpu` here and use that profile"
        )
    return "cpu"


@dataclass
class Measurement:
    total: Timing
    op_s: list[float | None]  # per captured op; None where no event matched
    profiled_runs: int
    notes: list[str] = field(default_factory=list)
    host_speed: HostSpeed | None = None  # the host-speed index timed beside the total, when it was


def _to_device(x, device: str):
    return x.to(device) if isinstance(x, torch.Tensor) else x


def measure_total(model, inputs: tuple, device: str, *, budget_s: float = 1.0) -> Timing:
    """Eager forward plus synchronize, after warm-up: the quantity ``total.predicted_s`` predicts."""

    def call():
        model(*inputs)
        _sync(device)

    with torch.no_grad():
        return time_fn(call, device=device, clock="host", inner=1, budget_s=budget_s, warmup_budget_s=0.5, min_samples=10, label="forward")


WARMUP_S = 0.25  # least warm-up of a model before it is timed beside the index


def measure_total_beside_index(model, inputs: tuple, device: str, overheads: Overheads, *, budget_s: float = 1.0) -> tuple[Timing, HostSpeed]:
    """The eager forward as ``measure_total`` times it, in blocks alternating with the host-speed
    index (``roofline.host_speed``), so that the prediction can be put at the host's speed of the
    moment the model ran."""

    def call():
        model(*inputs)
        _sync(device)

    with torch.no_grad():
        start = time.perf_counter()
        warm = 0
        while warm < 3 or time.perf_counter() - start < WARMUP_S:
            call()
            warm += 1
        return host_speed_beside(call, device, overheads, budget_s=budget_s)



class _quiet_native_stderr:
    """Point file descriptor 2 at /dev/null for a moment: silences native libraries' prints, which
    Python's sys.stderr redirection cannot reach. Python exceptions still propagate."""

    def __enter__(self):
        import os
        import sys

        sys.stderr.flush()
        self._saved = os.dup(2)
        self._null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(self._null, 2)

    def __exit__(self, *exc):
        import os

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


def measure_ops(graph: CapturedGraph, state: dict, inputs: tuple, device: str, *, runs: int = 5) -> tuple[list[float | None], list[str]]:
    """Per-op times (seconds) from the profiler over ``runs`` replays of the captured graph."""
    from torch.profiler import ProfilerActivity, profile

    gm = graph.graph_module
    notes: list[str] = []
    if gm is None:
        return [None] * len(graph.ops), ["no graph to replay: per-op times not measured"]
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with torch.no_grad():
        for _ in range(3):
            gm(state, *inputs)
        _sync(device)
        prof = profile(activities=activities)
        with _quiet_native_stderr():  # the profiler's C++ side prints start/stop lines
            prof.start()
        try:
            for _ in range(runs):
                gm(state, *inputs)
                _sync(device)
        finally:
            with _quiet_native_stderr():
                prof.stop()
    events = [e for e in prof.events() if e.cpu_parent is None and e.name.startswith("aten::")]
    expected = [f"{op.target.namespace}::{op.target._opname}" if hasattr(op.target, "_opname") else "" for op in graph.ops]
    per_op: list[list[float]] = [[] for _ in graph.ops]
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


def _on_device(model, inputs: tuple, device: str):
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    return model, pytree.tree_map(lambda x: _to_device(x, device), tuple(inputs))


def measure(
    graph: CapturedGraph, model, inputs: tuple, device: str, *, budget_s: float = 1.0, runs: int = 5, per_op: bool = True,
    overheads: Overheads | None = None,
) -> Measurement:
    """Move a real model and inputs to ``device``, then measure the total and (``per_op``) the per-op
    times. Pass ``per_op=False`` when more timings follow in this process, and call ``add_per_op``
    after the last of them (see the module docstring). With the profile's ``overheads``, the total
    is timed beside the host-speed index, which ``Measurement.host_speed`` then holds."""
    model, inputs = _on_device(model, inputs, device)
    speed = None
    if overheads is not None and overheads.dispatch_by_op_s:
        total, speed = measure_total_beside_index(model, inputs, device, overheads, budget_s=budget_s)
    else:
        total = measure_total(model, inputs, device, budget_s=budget_s)
    measurement = Measurement(
        total=total, op_s=[None] * len(graph.ops), profiled_runs=0, notes=[total.warning] if total.warning else [], host_speed=speed
    )
    if per_op:
        add_per_op(measurement, graph, model, inputs, device, runs=runs)
    return measurement


def add_per_op(measurement: Measurement, graph: CapturedGraph, model, inputs: tuple, device: str, *, runs: int = 5) -> Measurement:
    """Fill ``measurement.op_s`` by profiling ``runs`` replays of the captured graph."""
    from roofline.capture import _named_state

    model, inputs = _on_device(model, inputs, device)
    state = dict(_named_state(model)) if isinstance(model, torch.nn.Module) else {}
    try:
        op_s, notes = measure_ops(graph, state, inputs, device, runs=runs)
    except Exception as e:  # a graph that cannot be replayed still leaves the end-to-end figure
        op_s, notes = [None] * len(graph.ops), [f"per-op replay failed ({type(e).__name__}: {str(e).splitlines()[0][:160]})"]
    measurement.op_s = op_s
    measurement.profiled_runs = runs
    measurement.notes = notes + measurement.notes
    return measurement


def roofline_time_s(flops: int, nbytes: int, peak_flop_per_s: float, peak_bytes_per_s: float) -> float:
    """The roof: the least time the op could take at the device's best measured rates."""
    return max(flops / peak_flop_per_s if peak_flop_per_s else 0.0, nbytes / peak_bytes_per_s if peak_bytes_per_s else 0.0)


def _graph_replay(model, inputs: tuple, device: str):
    """Capture one forward as a CUDA graph (after warm-up on a side stream); returns replay + sync."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            model(*inputs)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(*inputs)

    def replay():
        graph.replay()
        _sync(device)

    replay.graph = graph  # keep the graph alive as long as the callable
    return replay


PAIRED_ROUNDS = 5
INDEX_SAMPLES_PER_ROUND = 3


def paired_times(eager, alternative, *, budget_s: float, rounds: int = PAIRED_ROUNDS, indexes: dict | None = None) -> tuple[float, float, dict[str, float]]:
    """Median eager and alternative times, timed in alternating rounds; both callables synchronize.
    With ``indexes`` (name -> one pass of a host-speed index: ``roofline.host_speed.index_call``),
    also each index's median time per pass, timed in the same rounds (an empty dict without).

    A gain is a difference of two host-bound times. Host speed drifts by tens of percent within
    minutes (and runs slow for seconds after a compile), so two figures timed apart carry the drift
    into the gain: seed 003's compile gain changed sign between runs (RESULTS.md, run 20). Timed
    side by side in each round, eager and the alternative see the same host. Each round calls each
    side as often as ``budget_s`` allows (at least once) after one untimed call (the first call
    after the other side's code runs slow: ``roofline.host_speed``), so a slow model costs
    4 x rounds calls past its warm-up, not the timing protocol's minimum samples per side and round.
    """
    eager()
    alternative()
    t0 = time.perf_counter()
    eager()
    call_s = time.perf_counter() - t0
    per_round = max(1, min(50, int(budget_s / (2 * rounds) / max(call_s, 1e-7))))
    eager_s, alt_s = [], []
    index_s: dict[str, list[float]] = {name: [] for name in (indexes or {})}
    for _ in range(rounds):
        for fn, out in ((eager, eager_s), (alternative, alt_s)):
            fn()
            for _ in range(per_round):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
        for name, index in (indexes or {}).items():
            index()
            index_s[name] += [index_sample_s(index) for _ in range(INDEX_SAMPLES_PER_ROUND)]
    return statistics.median(eager_s), statistics.median(alt_s), {name: statistics.median(v) for name, v in index_s.items()}


def _index_of(overheads: Overheads | None, device: str):
    """(one pass of the host-speed index on ``device``, its time at calibration), or None when the
    overheads recorded no mix to compare with."""
    if overheads is None or not overheads.dispatch_by_op_s:
        return None
    return index_call(device), calibrated_index_s(overheads)


def host_indexes(profile: DeviceProfile, device: str, kinds=("cuda", "cpu")) -> tuple[dict, dict[str, float]]:
    """For each of ``kinds`` ('cuda': the host's launch path to ``device``; 'cpu': the host CPU's own
    small ops) whose profile part recorded its mix: one pass of its host-speed index, and the time of
    that pass at calibration. Host scale of a kind = its index time now / at calibration."""
    calls, calibrated = {}, {}
    for kind in kinds:
        if kind == "cuda" and (profile.gpu is None or not device.startswith("cuda")):
            continue
        found = _index_of(profile.part(kind).measurements.overheads, device if kind == "cuda" else "cpu")
        if found is not None:
            calls[kind], calibrated[kind] = found
    return calls, calibrated


def measure_alternatives(
    model, inputs: tuple, device: str, *, budget_s: float = 1.0, compile_modes=("default", "reduce-overhead"), cuda_graphs: bool = True,
    overheads: Overheads | None = None,
) -> tuple[dict, list[str], dict, dict]:
    """Measured forward time under CUDA-graph replay and torch.compile, to check predicted gains.

    Returns (times by alternative, notes, eager times by alternative, host scales by alternative).
    Each alternative is timed like eager (call + synchronize, after warm-up), in rounds
    alternating with eager itself (``paired_times``); its gain is the eager time beside it less its
    own. With the profile's ``overheads``, the host-speed index is timed in the same rounds and its
    scale against calibration recorded (``roofline.host_speed``). Compilation happens in the
    warm-up and is not counted. Failures are reported as notes, never hidden.
    """
    out: dict[str, float] = {}
    eager_beside: dict[str, float] = {}
    scale_beside: dict[str, float] = {}
    notes: list[str] = []
    if not device.startswith("cuda"):
        return out, notes, eager_beside, scale_beside
    found = _index_of(overheads, device)
    indexes = {"cuda": found[0]} if found else {}

    def paired(key, alternative):
        eager_beside[key], out[key], index_s = paired_times(eager, alternative, budget_s=budget_s, indexes=indexes)
        if index_s:
            scale_beside[key] = index_s["cuda"] / found[1]
    model, inputs = _on_device(model, inputs, device)

    def eager():
        model(*inputs)
        _sync(device)

    with torch.no_grad():
        for _ in range(3):
            eager()
        if cuda_graphs:
            try:
                replay = _graph_replay(model, inputs, device)
                paired("cuda_graphs", replay)
            except Exception as e:
                notes.append(f"CUDA-graph replay not measured ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        for mode in compile_modes:
            key = "torch_compile" if mode == "default" else "torch_compile_reduce_overhead"
            try:
                import torch._dynamo as dynamo

                from calibrate.overhead import single_process_compile

                dynamo.reset()
                compiled = torch.compile(model, mode=mode)
                with single_process_compile():  # no worker pool left busy while we time
                    for _ in range(3):
                        compiled(*inputs)
                _sync(device)

                def compiled_call():
                    compiled(*inputs)
                    _sync(device)

                paired(key, compiled_call)
            except Exception as e:
                notes.append(f"torch.compile(mode={mode!r}) not measured ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
    return out, notes, eager_beside, scale_beside


def measure_placement(model, inputs: tuple, device: str, *, budget_s: float = 0.5, profile: DeviceProfile | None = None) -> dict:
    """Measured CPU time, and GPU time with the copies in and out, of one call (seed 000's comparison).

    The two sides are timed in alternating rounds (``paired_times``), so both see the same host; a
    module gets a copy on each device. With the ``profile``, the host-speed index of each part (the
    host's launch path to the GPU, and the host CPU's own small ops) is timed in the same rounds:
    ``host_scales`` maps 'cuda' and 'cpu' to index time now / at calibration, for a placement
    predicted at the host's speed of the moment.
    """
    import copy

    cpu_inputs = pytree.tree_map(lambda x: _to_device(x, "cpu"), tuple(inputs))
    if isinstance(model, torch.nn.Module):
        cpu_model = model.to("cpu").eval()
        gpu_model = copy.deepcopy(cpu_model).to(device)
    else:
        cpu_model = gpu_model = model

    def on_cpu():
        cpu_model(*cpu_inputs)

    def round_trip():
        dev_inputs = pytree.tree_map(lambda x: _to_device(x, device), cpu_inputs)
        result = gpu_model(*dev_inputs)
        pytree.tree_map(lambda x: x.to("cpu") if isinstance(x, torch.Tensor) else x, result)
        _sync(device)

    return paired_placement(on_cpu, round_trip, device, budget_s=budget_s, profile=profile)


def paired_placement(on_cpu, on_gpu, device: str, *, budget_s: float, profile: DeviceProfile | None = None) -> dict:
    """A placement's CPU and GPU sides (callables; the GPU one synchronizes) timed in alternating
    rounds, with the profile's host-speed indexes beside them (``measure_placement``)."""
    indexes, calibrated = host_indexes(profile, device) if profile is not None else ({}, {})
    with torch.no_grad():
        cpu_s, gpu_s, index_s = paired_times(on_cpu, on_gpu, budget_s=budget_s, indexes=indexes)
    scales = {kind: index_s[kind] / calibrated[kind] for kind in index_s if calibrated.get(kind)}
    return {"cpu_s": cpu_s, "gpu_with_copies_s": gpu_s, "host_scales": scales}


def refresh_overheads(profile: DeviceProfile, kind: str, device: str) -> None:
    """Re-measure a profile's host overheads in place, now: dispatch by kind, interleaving, module
    calls and, on a GPU, graph and synchronize costs. On a shared host these drift by tens of
    percent within minutes (benchmarks/RESULTS.md, "Host noise"), so the benchmarks measure them
    beside each model; measured ceilings stay as calibrated. torch.compile's host costs were
    calibrated as ratios to the eager cost per kernel (calibrate/overhead.py) and move with it."""
    from calibrate.overhead import measure_overheads
    from roofline.curves import eager_chain_kernel_s
    from roofline.host_speed import scaled_stat

    part = profile.gpu if kind == "cuda" else profile.host
    old = part.measurements.overheads
    with torch.no_grad():  # as calibration: the grad mode models are timed in
        fresh = measure_overheads(device, budget_s=0.1, warnings=[])
    scale = eager_chain_kernel_s(fresh) / eager_chain_kernel_s(old)
    keep = {k: scaled_stat(getattr(old, k), scale) for k in ("compiled_call_s", "compiled_kernel_s", "compiled_input_s")}
    part.measurements.overheads = fresh.model_copy(update=keep)
