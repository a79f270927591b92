"""How fast the host runs now, against calibration: one figure, timed call for call beside the model.

Eager host costs (Python, the dispatcher, the driver's launch path) drift on a shared host by tens
of percent within seconds, and a model's host-bound time moves with them while its prediction
stands. The index here is calibration's own mix (``roofline.hostmix``): every representative op
called once in turn, host issue only. The profile records its time implicitly
(``roofline.model.host.calibrated_index_s``). Timed in rounds alternating with the model, both see
the same host phase, and

    host scale = index time now / index time at calibration

multiplies every host cost of the prediction (``Analysis.at_host_scale``); device-side costs stay.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from roofline.hostmix import mix_of, representative_ops
from roofline.model.host import calibrated_index_s
from roofline.schema.profile import Overheads
from roofline.timing import Slot, Timing, summarize, sync, time_rounds

INDEX_CALLS = 10  # passes of the mix per index sample, as calibration timed the mix
# untimed passes of the mix before an index is read: the first passes after other code run slower than
# the host's speed (x1.08 after a calibration stage on the lent H100, benchmarks/host_index_probe.py)
INDEX_WARM_PASSES = 3 * INDEX_CALLS
ALONE_CALLS = 20  # calls of each representative op per alone sample (about 5 ms on the lent H100's host)
MODEL_BLOCK_S = 2e-3  # model calls timed per round: about as long as one index sample
PAIRED_BUDGET_S = 1.0
MIN_ROUNDS = 7
READ_BUDGET_S = 0.25  # the index alone, read before a prediction: a few host phases of ~50 ms
# A scale outside this band is another machine's profile or a stalled run, not drift.
PLAUSIBLE_HOST_SCALE = (0.2, 5.0)


@dataclass
class HostSpeed:
    """The index timed beside a model, and what it says about the host."""

    index_now_s: float
    index_calibrated_s: float
    blocks: int

    @property
    def scale(self) -> float:
        return self.index_now_s / self.index_calibrated_s if self.index_calibrated_s > 0 else 1.0


def index_call(device: str, kinds=None):
    """One pass of the index: calibration's mix, every representative op called once in turn (of
    ``kinds`` only, when given: the ones a profile calibrated, whose index it records)."""
    ops = representative_ops(device)
    if kinds is not None:
        ops = {name: fn for name, fn in ops.items() if name in set(kinds)}
    return mix_of(ops)


def index_slot(mix, samples: int = 1) -> Slot:
    """The index as a slot of ``roofline.timing.time_rounds``: ``INDEX_CALLS`` passes per sample."""
    return Slot(mix, calls=INDEX_CALLS, samples=samples)


def index_sample_s(mix, warm_passes: int = 0) -> float:
    """Host time of one pass of the mix: ``warm_passes`` untimed passes and one more (the first after
    other code runs slow), then ``INDEX_CALLS`` passes timed together."""
    for _ in range(warm_passes):
        mix()
    return float(time_rounds({"index": index_slot(mix)}, rounds=1)["index"][0][0])


def alone_sample_s(ops: dict) -> float:
    """The representative ops each repeated alone, their per-call host times summed as the mix's ops
    alone are (``roofline.hostmix.mix_alone_sum_s``): per op one untimed call, then ``ALONE_CALLS``
    timed. Beside an index sample, their ratio is the interleaving factor of that moment."""
    total = 0.0
    for fn in ops.values():
        fn()
        start = time.perf_counter()
        for _ in range(ALONE_CALLS):
            fn()
        total += (time.perf_counter() - start) / ALONE_CALLS
    return total


def host_speed_beside(call, device: str, overheads: Overheads, *, budget_s: float = PAIRED_BUDGET_S, label: str = "forward") -> tuple[Timing, HostSpeed]:
    """(Timing of the model, HostSpeed): ``call`` (which synchronizes) and the index timed in
    alternating rounds until ``budget_s`` is spent (at least ``MIN_ROUNDS``): per round one index
    sample, then the model's calls for ``MODEL_BLOCK_S`` (at least one), each after one untimed call
    (a model call right after the index, or the index right after the model, runs up to 1.5x slow,
    and the model's time that prediction is for is the back-to-back one). Runs under
    ``torch.no_grad()``, the grad mode of calibration."""
    got, speed = _index_rounds(device, overheads, budget_s, {"model": Slot(call, seconds=MODEL_BLOCK_S)})
    return summarize(np.concatenate(got["model"]), label), speed


def host_scale_plausible(scale: float) -> bool:
    low, high = PLAUSIBLE_HOST_SCALE
    return low <= scale <= high


def read_host_speed(device: str, overheads: Overheads, *, budget_s: float = READ_BUDGET_S) -> HostSpeed:
    """The index alone for ``budget_s`` (at least ``MIN_ROUNDS`` samples): the host's speed now,
    read before a prediction on the machine the profile describes, so that the prediction's host
    costs stand for this moment's host rather than calibration's. Runs none of the model."""
    return _index_rounds(device, overheads, budget_s)[1]


def _index_rounds(device: str, overheads: Overheads, budget_s: float, beside: dict[str, Slot] | None = None) -> tuple[dict, HostSpeed]:
    """The index (after a warm-up of its mix) timed in rounds, each followed by the ``beside`` slots,
    until ``budget_s`` is spent (at least ``MIN_ROUNDS``), under ``torch.no_grad()``, the grad mode of
    calibration: (every slot's samples, the index's HostSpeed)."""
    import torch

    mix = index_call(device, overheads.dispatch_by_op_s)
    with torch.no_grad():
        for _ in range(INDEX_WARM_PASSES):
            mix()
        sync(device)
        got = time_rounds({"index": index_slot(mix), **(beside or {})}, rounds=MIN_ROUNDS, budget_s=budget_s, device=device)
    index_s = np.concatenate(got["index"])
    blocks = len(got["index"]) if beside else 0  # one block of the slots beside per round
    return got, HostSpeed(index_now_s=statistics.median(index_s.tolist()), index_calibrated_s=calibrated_index_s(overheads), blocks=blocks)


def warm_up(call, seconds: float = 0.25, at_least: int = 3) -> None:
    """Call ``call`` at least ``at_least`` times and for at least ``seconds``."""
    start, n = time.perf_counter(), 0
    while n < at_least or time.perf_counter() - start < seconds:
        call()
        n += 1
