"""Real training steps, timed as users run them: ``--measure --train``.

One step is what a training loop does each iteration: ``optimizer.zero_grad()`` (gradients set to
None, torch's default), the forward, the loss, ``loss.backward()``, ``optimizer.step()``, then a
synchronize. The optimizer and the loss are the ones the prediction captured
(``roofline.graph.training``), built for real tensors on the device, with the learning rate at zero:
every kernel of the step still runs, but the parameters keep their initial values. A measurement
repeats one batch, and with a learning rate the model memorizes it within a few hundred steps: its
loss collapses and its gradients underflow into subnormal floats, which x86 cores compute with
several times slower (docs/design.md, "Training steps"), a cost of the repetition that a user's
training on changing batches does not pay.

- The step: timed by the shared protocol (``roofline.timing``) after warm-up, in rounds beside the
  host-speed index when the profile recorded one (``roofline.measure.host_speed``).
- Per phase: further steps with a synchronize at each phase's end; each phase's median wall time.
  On a GPU those synchronizes stop the host from running ahead of the device, so the phases add up
  to a little more than the step.
- Peak memory: measured first, right after warm-up, so that nothing the timing allocates is
  counted, and after a garbage collection, so that earlier work's tensors kept only by reference
  cycles are not either: on a GPU, ``torch.cuda.max_memory_allocated`` over one step after the
  statistics are reset (the step starts with its gradients freed, as after ``zero_grad``); on the
  CPU, what the step holds before it starts (parameters, buffers, optimizer state, the batch) plus the highest
  total of the allocations made during it, as ``torch.profiler`` records them.
"""

from __future__ import annotations

import gc
import statistics
import time
from dataclasses import dataclass, field, replace

import torch

from roofline.graph.structure import map_tensors, tensors_in
from roofline.graph.training import PHASES, TrainStep, make_loss, make_optimizer, step_autocast
from roofline.measure.host_speed import HostSpeed, host_speed_beside, warm_up
from roofline.measure.run import _quiet_native_stderr
from roofline.schema.profile import Overheads
from roofline.timing import Timing, sync, time_fn

PHASE_STEPS = 9  # steps timed phase by phase


@dataclass
class StepMeasurement:
    total: Timing
    phases_s: dict[str, float]
    peak_bytes: int | None
    host_speed: HostSpeed | None = None
    notes: list[str] = field(default_factory=list)


class RealStep:
    """A model's training step on real tensors on ``device``, callable once per iteration."""

    def __init__(self, model, args: tuple, kwargs: dict, step: TrainStep, device: str):
        self.device = device
        self.model = model.to(device).train()
        move = lambda t: t.to(device)  # noqa: E731
        self.args, self.kwargs = map_tensors(args, move), map_tensors(kwargs, move)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.step = step
        self.optimizer = make_optimizer(self.params, replace(step, lr=0.0))  # why: the module docstring
        with torch.enable_grad(), step_autocast(step, torch.device(device).type):
            output = self.model(*self.args, **self.kwargs)
            self.loss_of, _ = make_loss(output, self.args, self.kwargs, step)
        self.stamps: list[float] | None = None

    def _mark(self) -> None:
        if self.stamps is not None:
            sync(self.device)
            self.stamps.append(time.perf_counter())

    def __call__(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)
        self.run_after_zero_grad()

    def run_after_zero_grad(self) -> None:
        self._mark()
        with torch.enable_grad():
            with step_autocast(self.step, torch.device(self.device).type):
                loss = self.loss_of(self.model(*self.args, **self.kwargs))
            self._mark()
            loss.backward()
        self._mark()
        self.optimizer.step()
        sync(self.device)
        self._mark()

    def resident_bytes(self) -> int:
        """What the step holds before it starts: parameters, buffers, optimizer state, the batch."""
        seen, total = set(), 0
        state = [v for s in self.optimizer.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
        for t in [*self.model.parameters(), *self.model.buffers(), *state, *tensors_in((self.args, self.kwargs))]:
            if t.device.type != torch.device(self.device).type or id(t) in seen:
                continue
            seen.add(id(t))
            total += t.numel() * t.element_size()
        return total


def measure_step(model, args: tuple, kwargs: dict, step: TrainStep, device: str, *, overheads: Overheads | None = None,
                 budget_s: float = 1.0) -> StepMeasurement:
    """Time real training steps of ``model`` on ``device`` (module docstring)."""
    real = RealStep(model, args, kwargs, step, device)
    warm_up(real, seconds=0.3, at_least=3)
    peak = _peak_bytes(real)  # first, so that nothing the timing below allocates can be counted as the step's
    notes = []
    speed = None
    if overheads is not None and overheads.dispatch_by_op_s:
        total, speed = host_speed_beside(real, device, overheads, budget_s=budget_s, label="training step")
    else:
        total = time_fn(real, device=device, clock="host", inner=1, budget_s=budget_s, warmup_budget_s=0.3, min_samples=7, label="training step")
    if total.warning:
        notes.append(total.warning)
    phases = _phases(real)
    subnormal = subnormal_note([p.grad for p in real.params if p.grad is not None], device)
    if subnormal:
        notes.append(subnormal)
    zeros = zero_sqrt_note(real.optimizer, total.stat().median_s, device)
    if zeros:
        notes.append(zeros)
    return StepMeasurement(total=total, phases_s=phases, peak_bytes=peak, host_speed=speed, notes=notes)


SUBNORMAL_SHARE = 1e-4  # of the gradients' values, above which a CPU measurement is flagged


def subnormal_note(gradients: list[torch.Tensor], device: str) -> str | None:
    """A note when the measured step's gradients hold subnormal floats on the CPU: x86 cores compute
    with them many times slower, a cost of the values that no profile, and no prediction from
    shapes, can price."""
    if torch.device(device).type != "cpu":
        return None
    floats = [g for g in gradients if g.is_floating_point()]
    total = sum(g.numel() for g in floats)
    if not total:
        return None
    count = sum(int(((g != 0) & (g.abs() < torch.finfo(g.dtype).tiny)).sum()) for g in floats)
    if count / total < SUBNORMAL_SHARE:
        return None
    return (f"{count:,} of the step's {total:,} gradient values ({100 * count / total:.2g}%) are subnormal floats, which the CPU "
            f"computes with many times slower than the prediction assumes; torch.set_flush_denormal(True) flushes them to zero")


def _phases(real: RealStep) -> dict[str, float]:
    samples: dict[str, list[float]] = {p: [] for p in PHASES}
    for _ in range(PHASE_STEPS):
        real.optimizer.zero_grad(set_to_none=True)
        real.stamps = []
        real.run_after_zero_grad()
        marks, real.stamps = real.stamps, None
        for phase, (a, b) in zip(PHASES, zip(marks, marks[1:])):
            samples[phase].append(b - a)
    return {p: statistics.median(v) for p, v in samples.items()}


def _peak_bytes(real: RealStep) -> int | None:
    real.optimizer.zero_grad(set_to_none=True)
    # Earlier work's tensors that only a reference cycle keeps (a model and its optimizer dropped by
    # the caller, not yet collected) are still allocated on the device: they are not the step's.
    gc.collect()
    if real.device.startswith("cuda"):
        sync(real.device)
        torch.cuda.reset_peak_memory_stats(real.device)
        real.run_after_zero_grad()
        return int(torch.cuda.max_memory_allocated(real.device))
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    resident = real.resident_bytes()
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with _quiet_native_stderr():
        prof.start()
    try:
        real.run_after_zero_grad()
    finally:
        with _quiet_native_stderr():
            prof.stop()
    allocated = []

    def walk(node):
        if node.tag == _EventType.Allocation:
            allocated.append((node.start_time_ns, node.extra_fields.alloc_size))
        for child in node.children:
            walk(child)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root)
    alive = peak = 0
    for _, nbytes in sorted(allocated):
        alive += nbytes
        peak = max(peak, alive)
    return resident + peak


# Adam's and AdamW's second moments, whose square root every unfused step takes
SQRT_STATE = ("exp_avg_sq", "max_exp_avg_sq")
ZERO_SQRT_SHARE = 0.05  # of the measured step, above which the zeros' cost is noted
ZERO_SQRT_SAMPLE = 1 << 16  # elements of the state timed to find what a zero costs this CPU (~0.5 ms)


def sqrt_zero_extra_s(values: torch.Tensor, repeats: int = 5) -> float:
    """Seconds per exact zero that this CPU's ``torch.sqrt`` takes on ``values`` beyond the same
    values with their zeros made ones (the best of ``repeats`` calls each): on some x86 CPUs (a
    2-core Intel Xeon) the vector math library's special-value path makes a zero's square root
    about 20 times as slow as another value's, more where zeros and other values share a vector;
    on others (an AMD EPYC) it costs nothing more."""
    zeros = int((values == 0).sum())
    if not zeros:
        return 0.0
    out = torch.empty_like(values)
    best = []
    for x in (values, torch.where(values == 0, 1.0, values)):
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            torch.sqrt(x, out=out)
            times.append(time.perf_counter() - start)
        best.append(min(times))
    return max(best[0] - best[1], 0.0) / zeros


def zero_sqrt_note(optimizer: torch.optim.Optimizer, step_s: float, device: str, extra_s: float | None = None) -> str | None:
    """A note when a measured CPU step's optimizer takes the square root of second moments that are
    exactly zero (parameters whose gradients were all zero so far: dead ReLU units) and this CPU's
    sqrt is slow on zeros, for at least ``ZERO_SQRT_SHARE`` of the step: a cost of the values that
    no prediction from shapes can price. ``extra_s``: seconds per zero (else timed now on up to
    ``ZERO_SQRT_SAMPLE`` elements of the state that hold zeros, in their own order)."""
    if torch.device(device).type != "cpu" or optimizer.defaults.get("fused"):
        return None  # the fused CPU kernel does not pay it, nor does a GPU
    state = [t for s in optimizer.state.values() for k, t in s.items() if k in SQRT_STATE and isinstance(t, torch.Tensor)]
    counts = [int((t == 0).sum()) for t in state]
    zeros, total = sum(counts), sum(t.numel() for t in state)
    if not zeros:
        return None
    if extra_s is None:
        sample = torch.cat([t.detach().flatten()[:ZERO_SQRT_SAMPLE] for t, n in zip(state, counts) if n])[:ZERO_SQRT_SAMPLE]
        extra_s = sqrt_zero_extra_s(sample.float().contiguous())
    cost_s = zeros * extra_s
    if cost_s < ZERO_SQRT_SHARE * step_s:
        return None
    name = type(optimizer).__name__
    return (f"{zeros:,} of the optimizer's {total:,} second-moment values (exp_avg_sq) are exactly zero (parameters whose gradients "
            f"were all zero: dead units), and this CPU's sqrt takes {extra_s * 1e9:.1f} ns more per zero than per other value: "
            f"about {cost_s * 1e6:.0f} us of the measured {step_s * 1e6:.0f} us step, a cost of the values that the prediction from "
            f"shapes does not include; {name}(..., fused=True) runs a CPU kernel that does not pay it (foreach does)")
