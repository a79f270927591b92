"""Host costs of a training step that the forward's dispatch does not cover, measured on this host.

- ``grad_record_s``: an op autograd records costs the host more than the same op under
  ``torch.no_grad()`` (it makes a node and saves what backward needs). A chain of ``CHAIN`` adds on
  a tiny tensor that requires grad against the same chain under no_grad, in alternating rounds;
  the difference per op.
- ``autograd_node_s``: the engine's own host time per node. The backward of that chain runs one
  ``AddBackward0`` per add, which passes the gradient through without an op: the backward's time
  over the chain's length is the engine's time per node.
- ``phase_switch``: each phase of a training step runs after the others, with the host's caches full
  of their code and data, where every figure above (and the forward's dispatch) was timed in hot
  loops of one thing. A probe (``PROBE_LAYERS`` Linear + ReLU layers, width ``PROBE_WIDTH``, batch
  ``PROBE_BATCH``, AdamW as torch runs it on the device: host-bound) times its forward with the
  loss, its backward and its optimizer step inside whole steps (a synchronize at each phase's end,
  as ``--measure --train`` does) and each repeated alone; the ratio per phase, at least 1.
- ``optimizers``: ``optimizer.zero_grad()`` and ``optimizer.step()`` over ``P`` tiny parameters (so
  that their kernels take no time), for each optimizer and implementation, at two counts: their host
  time is ``call_s + per_parameter_s x P`` (the optimizer's Python, per tensor and per step, and its
  ops' dispatch; the loop that puts the gradients back, about what zero_grad costs, is left in).

All in alternating rounds (``roofline.timing.time_rounds``), the median round kept. On a GPU the
tensors live there and only host time is timed (no synchronize inside the timed calls).
``roofline calibrate`` is to store them in ``Overheads.training``; until then
``benchmarks/train_check.py --training-host OUT`` writes a copy of a profile with them.
"""

from __future__ import annotations

import statistics
import time

import torch

from roofline.graph.training import OPTIMIZERS, PHASES, TrainStep, make_optimizer
from roofline.schema.profile import OptimizerHost, Stat, TrainingOverheads
from roofline.timing import Slot, sync, time_rounds

CHAIN = 64  # ops per timed chain
PROBE_LAYERS, PROBE_WIDTH, PROBE_BATCH = 6, 64, 8
PROBE_STEPS = 9  # steps (and repetitions alone) per round of the phase-switch probe
PARAMETER_COUNTS = (4, 32)  # tensors per optimizer step timed
OPTIMIZER_SLOT_S = 0.015  # per round and parameter count: tens of steps, of which the median round's median is kept
IMPLEMENTATIONS = ("for-loop", "foreach", "fused")
# Adam is priced with AdamW's figures (roofline.advice.training.SAME_HOST_PATH: the same code runs)
MEASURED_OPTIMIZERS = tuple(o for o in OPTIMIZERS if o != "adam")


def _stat(samples: list[float]) -> Stat:
    ordered = sorted(samples)
    q = lambda f: ordered[min(int(f * len(ordered)), len(ordered) - 1)]  # noqa: E731
    return Stat(median_s=max(statistics.median(ordered), 1e-12), iqr_s=max(q(0.75) - q(0.25), 0.0), samples=len(ordered))


def measure_training_host(device: str = "cpu", *, rounds: int = 5) -> TrainingOverheads:
    """The host costs above, on ``device``'s tensors (with grad enabled, as a training step runs,
    whatever mode the caller is in: calibration runs under no_grad)."""
    with torch.enable_grad():
        return _measure_training_host(device, rounds)


def _measure_training_host(device: str, rounds: int) -> TrainingOverheads:
    x0 = torch.randn(8, device=device)
    w = torch.randn(8, device=device)
    leaf = x0.clone().requires_grad_()

    def chain(x):
        for _ in range(CHAIN):
            x = x + w
        return x

    def no_grad_chain():
        with torch.no_grad():
            chain(x0)

    def grad_chain():
        chain(leaf)

    def grad_chain_backward():
        chain(leaf).backward(w)

    got = time_rounds({
        "no_grad": Slot(no_grad_chain, calls=5, seconds=0.02), "grad": Slot(grad_chain, calls=5, seconds=0.02),
        "backward": Slot(grad_chain_backward, calls=5, seconds=0.02),
    }, rounds=rounds, warmup_rounds=1, device=device)
    per_round = [
        (float(statistics.median(g)) - float(statistics.median(n)), float(statistics.median(b)) - float(statistics.median(g)))
        for n, g, b in zip(got["no_grad"], got["grad"], got["backward"])
    ]
    record = _stat([max(r, 1e-12) / CHAIN for r, _ in per_round])
    node = _stat([max(b, 1e-12) / CHAIN for _, b in per_round])
    return TrainingOverheads(grad_record_s=record, autograd_node_s=node, optimizers=_optimizers(device, rounds),
                             phase_switch=phase_switch(device, rounds))


def phase_switch(device: str, rounds: int = 5) -> dict[str, float]:
    """Per phase, the probe's time inside whole steps over its time repeated alone (module docstring)."""
    torch.manual_seed(0)
    layers = []
    for _ in range(PROBE_LAYERS):
        layers += [torch.nn.Linear(PROBE_WIDTH, PROBE_WIDTH), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).to(device)
    x = torch.randn(PROBE_BATCH, PROBE_WIDTH, device=device)
    opt = make_optimizer(list(model.parameters()), TrainStep(optimizer="adamw"))

    def loss_of():
        return model(x).square().mean()

    def timed(fn) -> float:
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        return time.perf_counter() - t0

    ratios: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for r in range(rounds + 1):  # the first round warms up
        inside: dict[str, list[float]] = {k: [] for k in ratios}
        for _ in range(PROBE_STEPS):
            opt.zero_grad(set_to_none=True)
            box = {}
            inside["forward"].append(timed(lambda: box.setdefault("loss", loss_of())))
            inside["backward"].append(timed(lambda: box["loss"].backward()))
            inside["optimizer"].append(timed(opt.step))
        alone = {"forward": [timed(loss_of) for _ in range(PROBE_STEPS)]}
        loss = loss_of()
        alone["backward"] = [timed(lambda: loss.backward(retain_graph=True)) for _ in range(PROBE_STEPS)]
        alone["optimizer"] = [timed(opt.step) for _ in range(PROBE_STEPS)]
        if r:
            for k in ratios:
                ratios[k].append(statistics.median(inside[k]) / statistics.median(alone[k]))
    return {k: max(float(statistics.median(v)), 1.0) for k, v in ratios.items()}


def _zero_grad_and_step(opt, params: list[torch.Tensor], grads: list[torch.Tensor]):
    """``zero_grad()``, the gradients back (as backward would make them: a loop over the parameters
    of the order of ``p.grad = g``, left in the figure), then ``step()``."""

    def run():
        opt.zero_grad(set_to_none=True)
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()

    return run


def _optimizers(device: str, rounds: int) -> dict[str, OptimizerHost]:
    out = {}
    for name in MEASURED_OPTIMIZERS:
        for impl in IMPLEMENTATIONS:
            slots, steps = {}, []
            try:
                for n in PARAMETER_COUNTS:
                    params = [torch.randn(16, device=device, requires_grad=True) for _ in range(n)]
                    opt = make_optimizer(params, TrainStep(optimizer=name, implementation=impl))
                    grads = [torch.randn_like(p) for p in params]
                    for p, g in zip(params, grads):
                        p.grad = g
                    opt.step()
                    sync(device)
                    slots[str(n)] = Slot(_zero_grad_and_step(opt, params, grads), calls=2, seconds=OPTIMIZER_SLOT_S)
                    steps.append(opt)
            except Exception:  # noqa: BLE001 - an implementation this torch or device lacks
                continue
            got = time_rounds(slots, rounds=rounds, warmup_rounds=1, device=device)
            # the line through each round's two medians (both counts timed in the same host phase), then the median line
            lines = []
            for small_r, large_r in zip(got[str(PARAMETER_COUNTS[0])], got[str(PARAMETER_COUNTS[1])]):
                small, large = float(statistics.median(small_r)), float(statistics.median(large_r))
                per = max((large - small) / (PARAMETER_COUNTS[1] - PARAMETER_COUNTS[0]), 0.0)
                lines.append((per, max(small - per * PARAMETER_COUNTS[0], 0.0)))
            per = statistics.median(p for p, _ in lines)
            call = statistics.median(c for _, c in lines)
            out[f"{name}:{impl}"] = OptimizerHost(call_s=call, per_parameter_s=per)
    return out
