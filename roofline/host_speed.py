"""How fast the host runs now, against calibration: one figure, timed call for call beside the model.

Eager host costs (Python, the dispatcher, the driver's launch path) drift on a shared host by tens
of percent within seconds: the accuracy benchmark's host-bound models measured 1.5-2x apart
between rounds of one run, while one prediction stood (benchmarks/RESULTS.md, "The host is the
error"). Re-measuring every overhead before a model (``measure.refresh_overheads``) took seconds
and tracked the model only when the host's phase held that long.

The index here is calibration's own mix: every representative op of ``calibrate.overhead`` called
once in turn, host issue only. The profile records its time implicitly, as the interleaving factor
times the sum of the ops' dispatch costs (the factor is that ratio). Timed in alternation with the
model, one index call beside each model call, both see the same host phase, and

    host scale = index time now / index time at calibration

multiplies every host cost of the prediction (``scaled_overheads``); device-side costs stay.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

from roofline.profile import Overheads, Stat
from roofline.timing import _sync

# Host-side fields of Overheads: what a slower host makes slower. kernel_min_s and graph_kernel_s
# are device time and the interleaving factor is a ratio, so they stay.
HOST_FIELDS = ("dispatch_s", "module_call_s", "synchronize_s", "graph_launch_s", "compiled_call_s", "compiled_kernel_s", "compiled_input_s", "op_small_s")
INDEX_CALLS = 10  # passes of the mix per index sample, as calibration timed the mix (``inner=10``)
MODEL_BLOCK_S = 2e-3  # model calls timed per block: about as long as one index sample
PAIRED_BUDGET_S = 1.0


def calibrated_index_s(overheads: Overheads) -> float:
    """The mix's host time as the profile recorded it: the interleaving factor (calibration's ratio
    of the mix to its ops alone) x the sum of the representative ops' dispatch costs."""
    from calibrate.overhead import mix_alone_sum_s

    return overheads.interleave_factor * mix_alone_sum_s({name: stat.median_s for name, stat in overheads.dispatch_by_op_s.items()})


def scaled_stat(stat: Stat | None, by: float) -> Stat | None:
    """A host cost measured at one host speed, moved to another ``by`` times slower."""
    return None if stat is None else stat.model_copy(update=dict(median_s=stat.median_s * by, iqr_s=stat.iqr_s * by))


def scaled_overheads(overheads: Overheads, scale: float, kind_scales: dict[str, float] | None = None) -> Overheads:
    """A copy of ``overheads`` with every host cost multiplied by ``scale``; with ``kind_scales``,
    each dispatch kind's cost by its own scale instead (kinds without one: ``scale``)."""
    update = {k: scaled_stat(getattr(overheads, k), scale) for k in HOST_FIELDS}
    update["dispatch_by_op_s"] = {name: scaled_stat(stat, (kind_scales or {}).get(name, scale)) for name, stat in overheads.dispatch_by_op_s.items()}
    return overheads.model_copy(update=update)


@dataclass
class HostSpeed:
    """The index timed beside a model, and what it says about the host."""

    index_now_s: float
    index_calibrated_s: float
    blocks: int
    # With ``per_kind`` timing (benchmarks/host_speed_probe.py): each representative op's host
    # time now, repeated alone, over its calibrated dispatch cost.
    kind_scales: dict[str, float] | None = None

    @property
    def scale(self) -> float:
        return self.index_now_s / self.index_calibrated_s if self.index_calibrated_s > 0 else 1.0


def index_call(device: str):
    """One pass of the index: calibration's mix, every representative op called once in turn."""
    from calibrate.overhead import mix_of, representative_ops

    return mix_of(representative_ops(device))


def warm_index_sample_s(mix) -> float:
    """One untimed pass of the mix (the first after other code runs slow), then ``index_sample_s``."""
    mix()
    return index_sample_s(mix)


def index_sample_s(mix) -> float:
    """Host time of one pass of the mix, from ``INDEX_CALLS`` passes timed together, host issue
    only. Callers make one untimed pass first: the first after other code runs slow."""
    t0 = time.perf_counter()
    for _ in range(INDEX_CALLS):
        mix()
    return (time.perf_counter() - t0) / INDEX_CALLS


def kind_sample_s(ops: dict) -> dict[str, float]:
    """Host time of each representative op repeated alone (one untimed call, then ``INDEX_CALLS``
    timed together), per call; the view op makes two views and is given per view, as calibrated."""
    out = {}
    for name, fn in ops.items():
        fn()
        t0 = time.perf_counter()
        for _ in range(INDEX_CALLS):
            fn()
        out[name] = (time.perf_counter() - t0) / INDEX_CALLS / (2 if name == "view" else 1)
    return out


def paired_index(call, device: str, *, budget_s: float = PAIRED_BUDGET_S, min_blocks: int = 7, kinds: list | None = None) -> tuple[list[float], list[float], int]:
    """(model call times, index times per pass, blocks), seconds: blocks of ``call`` (which
    synchronizes) and blocks of the index alternate until ``budget_s`` is spent (at least
    ``min_blocks`` of each). Each block starts with one untimed call: a model call right after the
    index, or the index right after the model, runs up to 1.5x slow while the other's code leaves
    the host's caches (run 28: seed 002's RNN step measured 82-116 us right after the index against
    57-76 us back to back), and the model's time that prediction is for is the back-to-back one.
    Then the model block times calls for ``MODEL_BLOCK_S`` (at least one) and the index block
    ``INDEX_CALLS`` passes. Runs under ``torch.no_grad()``, the grad mode of calibration. With a
    list ``kinds``, each index block also appends ``kind_sample_s`` of the representative ops to it."""
    import torch

    from calibrate.overhead import representative_ops

    mix = index_call(device)
    ops = representative_ops(device) if kinds is not None else None
    with torch.no_grad():
        for _ in range(3 * INDEX_CALLS):
            mix()
        _sync(device)
        model_s, index_s, blocks = [], [], 0
        start = time.perf_counter()
        while blocks < min_blocks or time.perf_counter() - start < budget_s:
            _sync(device)
            index_s.append(warm_index_sample_s(mix))
            if ops is not None:
                kinds.append(kind_sample_s(ops))
            _sync(device)
            call()
            block_start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                call()
                t1 = time.perf_counter()
                model_s.append(t1 - t0)
                if t1 - block_start >= MODEL_BLOCK_S:
                    break
            blocks += 1
    return model_s, index_s, blocks


def host_speed_beside(call, device: str, overheads: Overheads, *, budget_s: float = PAIRED_BUDGET_S, label: str = "forward", per_kind: bool = False):
    """(Timing of the model, HostSpeed): the model timed in blocks alternating with the index's.
    ``per_kind`` also times each representative op alone in the index blocks (``kind_scales``)."""
    from roofline.timing import summarize

    kinds: list | None = [] if per_kind else None
    model_s, index_s, blocks = paired_index(call, device, budget_s=budget_s, kinds=kinds)
    speed = HostSpeed(index_now_s=statistics.median(index_s), index_calibrated_s=calibrated_index_s(overheads), blocks=blocks)
    if kinds:
        calibrated = {name: stat.median_s for name, stat in overheads.dispatch_by_op_s.items()}
        speed.kind_scales = {
            name: statistics.median(sample[name] for sample in kinds) / calibrated[name] for name in kinds[0] if calibrated.get(name)
        }
    return summarize(model_s, label), speed


def with_host_scale(profile, kind: str, scale: float, kind_scales: dict[str, float] | None = None):
    """A shallow copy of ``profile`` whose ``kind`` part ('cuda' or 'cpu') has its host costs times
    ``scale`` (each dispatch kind's times its own ``kind_scales`` entry, where given)."""
    key = "host" if kind == "cpu" else "gpu"
    part = profile.part(kind)
    measurements = part.measurements.model_copy(update=dict(overheads=scaled_overheads(part.measurements.overheads, scale, kind_scales)))
    return profile.model_copy(update={key: part.model_copy(update=dict(measurements=measurements))})


def with_host_scales(profile, scales: dict[str, float]):
    """``with_host_scale`` for each part named in ``scales`` ('cuda', 'cpu'); the others as they are."""
    for kind, scale in scales.items():
        profile = with_host_scale(profile, kind, scale)
    return profile
