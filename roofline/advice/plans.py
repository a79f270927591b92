"""One ranked plan: every way to run the model (device x execution), each priced per call and
checked for whether it applies, and the one to recommend.

A plan on the GPU includes the copies the user's code implies (``Placement.transfer_s``). A plan
does not apply when the model cannot run that way: host syncs (``.item()``, ``nonzero``) break
CUDA graph capture and make torch.compile's one-graph prediction wrong, a device may have no kernel
for a dtype, and the model may not fit the device's memory. The recommendation is the simplest
applicable plan within ``GAIN_WORTH_IT`` of the fastest: a change that saves less is not worth a
user's effort.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline.schema.report import Alternatives, MemoryFit, Placement, Plan
from roofline.units import count, seconds

GAIN_WORTH_IT = 0.10  # a plan must beat a simpler one by this share of its time to be worth the change

# How much a user must change to run each way: eager is the code as it is; torch.compile is one
# line; a hand-made CUDA graph needs static input buffers and a capture.
EFFORT = {"eager": 0, "torch_compile": 1, "torch_compile_reduce_overhead": 1, "cuda_graphs": 2}
EXECUTION_WORDS = {
    "eager": "eager",
    "torch_compile": "torch.compile",
    "torch_compile_reduce_overhead": 'torch.compile(mode="reduce-overhead")',
    "cuda_graphs": "a CUDA graph (torch.cuda.graphs)",
}
DEVICE_WORDS = {"cuda": "GPU", "cpu": "CPU"}


@dataclass(frozen=True)
class DevicePart:
    """What the plans need of one device part of the profile."""

    device: str  # 'cuda' or 'cpu'
    alternatives: Alternatives  # eager and, on a GPU, the graphed and compiled times
    copies_s: float  # per call, on the GPU: inputs in, outputs out (weights when not resident)
    overhead_share: float  # of the eager time, the share that is host overhead
    missing_kernels: list[str]  # ops the device has no kernel for
    memory: MemoryFit | None


def plan_label(plan: Plan) -> str:
    """'GPU, a CUDA graph (torch.cuda.graphs)'."""
    return f"{DEVICE_WORDS[plan.device]}, {EXECUTION_WORDS[plan.execution]}"


def _blocker(part: DevicePart, execution: str, syncs: list[str]) -> str | None:
    if part.missing_kernels:
        return f"no {DEVICE_WORDS[part.device]} kernel for {', '.join(part.missing_kernels[:3])} (torch raises NotImplementedError); cast to a floating dtype"
    mem = part.memory
    if mem is not None and not mem.fits:
        return (
            f"does not fit: needs at least {count(mem.need_bytes, 'B')} (weights {count(mem.weights_bytes, 'B')}) "
            f"against {count(mem.capacity_bytes or 0, 'B')} of {DEVICE_WORDS[part.device]} memory"
        )
    if syncs and execution in ("cuda_graphs", "torch_compile_reduce_overhead"):
        return f"the host reads tensor values ({'; '.join(syncs[:2])}): a CUDA graph cannot capture that sync"
    return None


def _caveat(execution: str, syncs: list[str]) -> str | None:
    """Why a plan applies but its price cannot be stood behind."""
    if syncs and execution == "torch_compile":
        return f"graph breaks at {'; '.join(syncs[:2])}: priced as one graph, so optimistic"
    return None


def rank_plans(parts: list[DevicePart], syncs: list[str]) -> list[Plan]:
    """Every plan of every device part, the recommended one first, then the applicable ones by time,
    then those that do not apply."""
    plans: list[Plan] = []
    caveats: dict[int, str] = {}
    for part in parts:
        for execution, exec_s in part.alternatives.by_name().items():
            blocker = _blocker(part, execution, syncs)
            caveat = _caveat(execution, syncs)
            plan = Plan(
                device=part.device, execution=execution, predicted_s=exec_s + part.copies_s, copies_s=part.copies_s,
                applicable=blocker is None, reason=blocker or caveat or "",
            )
            if caveat and blocker is None:
                caveats[id(plan)] = caveat
            plans.append(plan)
        for execution in EFFORT:
            if execution not in part.alternatives.by_name() and (part.device == "cuda" or execution == "torch_compile"):
                blocker = _blocker(part, execution, syncs)
                plans.append(Plan(
                    device=part.device, execution=execution, predicted_s=None, applicable=blocker is None,
                    reason=blocker or f"not priced: the profile has no {EXECUTION_WORDS[execution]} calibration for the {DEVICE_WORDS[part.device]}",
                ))
    trusted = [p for p in plans if p.applicable and p.predicted_s is not None and id(p) not in caveats]
    if trusted:
        best_s = min(p.predicted_s for p in trusted)
        worth = [p for p in trusted if p.predicted_s <= best_s * (1 + GAIN_WORTH_IT)]
        chosen = min(worth, key=lambda p: (EFFORT[p.execution], p.predicted_s))
        chosen.recommended = True
        chosen.reason = _why(chosen, plans, {p.device: p for p in parts})
    return sorted(plans, key=lambda p: (not p.recommended, not p.applicable, p.predicted_s if p.predicted_s is not None else float("inf")))


def _why(chosen: Plan, plans: list[Plan], parts: dict[str, DevicePart]) -> str:
    """What makes the chosen plan the one: what it removes, and what it beats."""
    part = parts[chosen.device]
    eager = next(p for p in plans if p.device == chosen.device and p.execution == "eager")
    others = [p for p in plans if p is not chosen and p.applicable and p.predicted_s is not None]
    faster = [p for p in others if p.predicted_s < chosen.predicted_s]
    words = []
    share = f"{100 * part.overhead_share:.0f}% of eager {DEVICE_WORDS[chosen.device]} time is host overhead"
    if chosen.execution == "cuda_graphs":
        words.append(f"{share}, which one graph replay removes: {seconds(chosen.predicted_s)} against {seconds(eager.predicted_s)} eager")
    elif chosen.execution == "torch_compile_reduce_overhead":
        words.append(f"{share}; Inductor fuses the ops and replays them as one CUDA graph: {seconds(chosen.predicted_s)} against {seconds(eager.predicted_s)} eager")
    elif chosen.execution == "torch_compile":
        words.append(f"Inductor fuses pointwise ops into fewer kernels and launches ({share}): {seconds(chosen.predicted_s)} against {seconds(eager.predicted_s)} eager")
    other_device = [p for p in others if p.device != chosen.device]
    if other_device:
        best_other = min(other_device, key=lambda p: p.predicted_s)
        words.append(f"the best {DEVICE_WORDS[best_other.device]} plan ({EXECUTION_WORDS[best_other.execution]}) takes {seconds(best_other.predicted_s)}")
    if chosen.copies_s:
        words.append(f"copies in and out {seconds(chosen.copies_s)} included")
    if faster:
        f = min(faster, key=lambda p: p.predicted_s)
        words.append(f"{plan_label(f)} would save only {100 * (1 - f.predicted_s / chosen.predicted_s):.0f}% for more change")
    if not others:
        words.append("the only plan that applies and can be priced")
    elif not words:
        words.append("the fastest way to run it")
    return "; ".join(words)
