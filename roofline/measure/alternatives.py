"""Measured alternatives: the forward under CUDA-graph replay and torch.compile, and the CPU against
the GPU with copies, each timed in rounds alternating with what it is compared to.

A gain is a difference of two host-bound times. Host speed drifts by tens of percent within minutes
(and runs slow for seconds after a compile), so two figures timed apart carry the drift into the
gain. Timed side by side in each round (``roofline.timing.time_rounds``), eager and the alternative
see the same host; the host-speed index timed in the same rounds says how fast that host ran.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from roofline.graph.structure import map_tensors, tensors_in
from roofline.measure.host_speed import index_call, index_slot
from roofline.measure.run import on_device
from roofline.model.host import calibrated_index_s
from roofline.schema.profile import DeviceProfile, Overheads
from roofline.timing import Slot, sync, time_rounds

PAIRED_ROUNDS = 5
INDEX_SAMPLES_PER_ROUND = 3


def paired_times(eager, alternative, *, budget_s: float, rounds: int = PAIRED_ROUNDS, indexes: dict | None = None) -> tuple[float, float, dict[str, float]]:
    """Median eager and alternative times, timed in alternating rounds; both callables synchronize.
    With ``indexes`` (name -> one pass of a host-speed index: ``host_speed.index_call``), also each
    index's median time per pass, timed in the same rounds (an empty dict without).

    Each round calls each side as often as ``budget_s`` allows (at least once), so a slow model
    costs a few calls per round past its warm-up, not the protocol's minimum samples per side."""
    eager()
    alternative()
    t0 = time.perf_counter()
    eager()
    call_s = time.perf_counter() - t0
    per_round = max(1, min(50, int(budget_s / (2 * rounds) / max(call_s, 1e-7))))
    slots = {"eager": Slot(eager, samples=per_round), "alternative": Slot(alternative, samples=per_round)}
    slots.update({f"index:{name}": index_slot(index, samples=INDEX_SAMPLES_PER_ROUND) for name, index in (indexes or {}).items()})
    got = time_rounds(slots, rounds=rounds)
    median = {name: statistics.median(np.concatenate(rounds_).tolist()) for name, rounds_ in got.items()}
    return median["eager"], median["alternative"], {name: median[f"index:{name}"] for name in (indexes or {})}


def index_of(overheads: Overheads | None, device: str):
    """(one pass of the host-speed index on ``device``, its time at calibration), or None when the
    overheads recorded no mix to compare with."""
    if overheads is None or not overheads.dispatch_by_op_s:
        return None
    return index_call(device, overheads.dispatch_by_op_s), calibrated_index_s(overheads)


def host_indexes(profile: DeviceProfile, device: str, kinds=("cuda", "cpu")) -> tuple[dict, dict[str, float]]:
    """For each of ``kinds`` ('cuda': the host's launch path to ``device``; 'cpu': the host CPU's own
    small ops) whose profile part recorded its mix: one pass of its host-speed index, and the time of
    that pass at calibration. Host scale of a kind = its index time now / at calibration."""
    calls, calibrated = {}, {}
    for kind in kinds:
        if kind == "cuda" and (profile.gpu is None or not device.startswith("cuda")):
            continue
        found = index_of(profile.part(kind).measurements.overheads, device if kind == "cuda" else "cpu")
        if found is not None:
            calls[kind], calibrated[kind] = found
    return calls, calibrated


def _graph_replay(model, args: tuple, kwargs: dict, device: str):
    """Capture one forward as a CUDA graph (after warm-up on a side stream); returns replay + sync."""
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            model(*args, **kwargs)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        model(*args, **kwargs)

    def replay():
        graph.replay()
        sync(device)

    replay.graph = graph  # keep the graph alive as long as the callable
    return replay


def single_process_compile():
    """Compile in this process. Inductor's default pool of compile workers starts with the first
    torch.compile and keeps the host's cores busy for seconds after it, which inflates host timings
    taken right after a compile by up to 2x."""
    from torch._inductor import config as inductor_config

    return inductor_config.patch(compile_threads=1)


def measure_alternatives(
    model, args: tuple, kwargs: dict, device: str, *, budget_s: float = 1.0, compile_modes=("default", "reduce-overhead"),
    cuda_graphs: bool = True, overheads: Overheads | None = None,
) -> tuple[dict, list[str], dict, dict]:
    """Measured forward time under CUDA-graph replay and torch.compile, to check predicted gains.

    Returns (times by alternative, notes, eager times by alternative, host scales by alternative).
    Each alternative is timed like eager (call + synchronize, after warm-up), in rounds alternating
    with eager itself (``paired_times``); its gain is the eager time beside it less its own. With the
    profile's ``overheads``, the host-speed index is timed in the same rounds and its scale against
    calibration recorded. Compilation happens in the warm-up and is not counted. Failures are
    reported as notes, never hidden.
    """
    out: dict[str, float] = {}
    eager_beside: dict[str, float] = {}
    scale_beside: dict[str, float] = {}
    notes: list[str] = []
    if not device.startswith("cuda"):
        return out, notes, eager_beside, scale_beside
    found = index_of(overheads, device)
    indexes = {"cuda": found[0]} if found else {}
    model, args, kwargs = on_device(model, args, kwargs, device)

    def eager():
        model(*args, **kwargs)
        sync(device)

    def paired(key, alternative):
        eager_beside[key], out[key], index_s = paired_times(eager, alternative, budget_s=budget_s, indexes=indexes)
        if index_s:
            scale_beside[key] = index_s["cuda"] / found[1]

    with torch.no_grad():
        for _ in range(3):
            eager()
        if cuda_graphs:
            try:
                paired("cuda_graphs", _graph_replay(model, args, kwargs, device))
            except Exception as e:
                notes.append(f"CUDA-graph replay not measured ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
        for mode in compile_modes:
            key = "torch_compile" if mode == "default" else "torch_compile_reduce_overhead"
            try:
                import torch._dynamo as dynamo

                dynamo.reset()
                compiled = torch.compile(model, mode=mode)
                with single_process_compile():  # no worker pool left busy while we time
                    for _ in range(3):
                        compiled(*args, **kwargs)
                sync(device)

                def compiled_call():
                    compiled(*args, **kwargs)
                    sync(device)

                paired(key, compiled_call)
            except Exception as e:
                notes.append(f"torch.compile(mode={mode!r}) not measured ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
    return out, notes, eager_beside, scale_beside


def measure_placement(model, args: tuple, kwargs: dict, device: str, *, budget_s: float = 0.5, profile: DeviceProfile | None = None) -> dict:
    """Measured CPU time, and GPU time with the copies in and out, of one call (seed 000's comparison).

    The two sides are timed in alternating rounds, so both see the same host; a module gets a copy
    on each device. With the ``profile``, the host-speed index of each part (the host's launch path
    to the GPU, and the host CPU's own small ops) is timed in the same rounds: ``host_scales`` maps
    'cuda' and 'cpu' to index time now / at calibration."""
    import copy

    cpu_model, cpu_args, cpu_kwargs = on_device(model, args, kwargs, "cpu")
    gpu_model = copy.deepcopy(cpu_model).to(device) if isinstance(cpu_model, torch.nn.Module) else cpu_model

    def on_cpu():
        cpu_model(*cpu_args, **cpu_kwargs)

    def round_trip():
        move = lambda t: t.to(device)  # noqa: E731
        result = gpu_model(*map_tensors(cpu_args, move), **map_tensors(cpu_kwargs, move))
        for t in tensors_in(result):
            t.to("cpu")
        sync(device)

    return paired_placement(on_cpu, round_trip, device, budget_s=budget_s, profile=profile)


def paired_placement(on_cpu, on_gpu, device: str, *, budget_s: float, profile: DeviceProfile | None = None) -> dict:
    """A placement's CPU and GPU sides (callables; the GPU one synchronizes) timed in alternating
    rounds, with the profile's host-speed indexes beside them (``measure_placement``)."""
    indexes, calibrated = host_indexes(profile, device) if profile is not None else ({}, {})
    with torch.no_grad():
        cpu_s, gpu_s, index_s = paired_times(on_cpu, on_gpu, budget_s=budget_s, indexes=indexes)
    scales = {kind: index_s[kind] / calibrated[kind] for kind in index_s if calibrated.get(kind)}
    return {"cpu_s": cpu_s, "gpu_with_copies_s": gpu_s, "host_scales": scales}
