"""Fixed per-call costs: host dispatch of one aten op, one nn.Module call, the smallest kernel,
CUDA-graph replay, and synchronize. These set the overhead regime that pure rooflines ignore.

Host costs are timed with the host clock over many back-to-back calls on tiny tensors, so the
device work is far shorter than the host's and the host is what is measured. Every host figure
here is taken in rounds alternating with what it is compared to (``roofline.timing.time_rounds``):
host speed drifts with whatever else the host runs, and a figure kept from the median round moves
with no single slow moment.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from roofline.hostmix import VIEWS_PER_VIEW_CALL, mix_alone_sum_s, mix_of, representative_ops
from roofline.schema.profile import Overheads, Stat
from roofline.timing import Slot, Timing, median_round, summarize, time_fn, time_rounds

ROUNDS = 5  # passes over the representative ops; the median pass of each op is kept
INNER = 100  # calls per timed sample: one perf_counter reading is ~50 ns, one call ~5 us
MIX_INNER = 10


def interleave_ratio(mix_s: float, alone_s: dict[str, float]) -> float:
    """Host time of all representative ops called in turn, over the sum of their times each
    repeated alone in the same round. Real code interleaves different ops, which a loop of one op
    hides (its code and branches stay hot)."""
    alone = mix_alone_sum_s(alone_s)
    return mix_s / alone if alone > 0 else 1.0


def _spread_warning(t: Timing, warnings: list) -> None:
    if t.warning:
        warnings.append(t.warning)


def measure_dispatch(device: str, *, budget_s: float, warnings: list, rounds: int = ROUNDS) -> tuple[dict[str, Stat], float]:
    """(dispatch cost of each representative op, the interleaving factor).

    Each round times every op repeated alone, then the mix of all of them in turn; per op the
    samples of its median round are kept, and the factor is the median round's ratio of the mix to
    the ops alone (timed side by side, so drift between rounds cancels)."""
    ops = representative_ops(device)
    slots = {name: Slot(fn, calls=INNER, seconds=budget_s / rounds) for name, fn in ops.items()}
    slots["mix"] = Slot(mix_of(ops), calls=MIX_INNER, seconds=budget_s / rounds)
    got = time_rounds(slots, rounds=rounds, warmup_rounds=1, device=device)
    per_view = {name: (VIEWS_PER_VIEW_CALL if name == "view" else 1) for name in ops}
    by_op = {}
    for name in ops:
        t = median_round([r / per_view[name] for r in got[name]], f"dispatch {name}")
        _spread_warning(t, warnings)
        by_op[name] = t.stat()
    ratios = []
    for i, mix_round in enumerate(got["mix"]):
        alone = {name: float(got[name][i].mean()) / per_view[name] for name in ops}
        ratios.append(interleave_ratio(float(mix_round.mean()), alone))
    return by_op, max(sorted(ratios)[len(ratios) // 2], 1.0)


def measure_module_call(device: str, budget_s: float) -> Stat:
    """Host cost of one nn.Module call in context: an 8-layer Linear+ReLU nn.Sequential against the
    same calls made functionally, divided by the 17 module calls (16 layers and the Sequential; a
    pass-through module alone under-measures it: real calls also go through Sequential's iteration
    and hook checks). A difference of two host timings: the median round's difference is kept."""
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(8, 8), torch.nn.ReLU()]
    seq = torch.nn.Sequential(*layers).to(device).eval()
    params = [(m.weight, m.bias) for m in seq if isinstance(m, torch.nn.Linear)]
    x = torch.rand(1, 8, device=device)

    def functional():
        y = x
        for w, b in params:
            y = torch.relu(F.linear(y, w, b))
        return y

    share = budget_s / ROUNDS
    got = time_rounds(
        {"modules": Slot(lambda: seq(x), calls=10, seconds=share), "functional": Slot(functional, calls=10, seconds=share)},
        rounds=2 * ROUNDS - 1, warmup_rounds=1, device=device,
    )
    rounds = [(summarize(m), summarize(f)) for m, f in zip(got["modules"], got["functional"])]
    diffs = [((m.median_s - f.median_s) / 17, (m.iqr_s + f.iqr_s) / 17, min(m.n, f.n)) for m, f in rounds]
    diff, iqr, _ = sorted(diffs)[len(diffs) // 2]
    return Stat(median_s=max(diff, 1e-9), iqr_s=iqr, samples=sum(n for _, _, n in diffs))


def measure_overheads(device: str, *, budget_s: float, warnings: list, progress=None) -> Overheads:
    by_op, interleave = measure_dispatch(device, budget_s=budget_s, warnings=warnings)
    if progress:
        progress()
    module_call = measure_module_call(device, budget_s)
    if progress:
        progress()
    fields = dict(dispatch_s=by_op["add"], module_call_s=module_call, dispatch_by_op_s=by_op, interleave_factor=interleave)
    if device.startswith("cuda"):
        fields.update(_gpu_overheads(device, budget_s, warnings))
    else:
        fields["op_small_s"] = by_op["add"]
    if progress:
        progress()
    return Overheads(**fields)


def _gpu_overheads(device: str, budget_s: float, warnings: list) -> dict:
    kernels = 200
    x = torch.zeros(1, device=device)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1)
    one = torch.cuda.CUDAGraph()
    with torch.cuda.graph(one):
        x.add_(1)

    per_kernel = time_fn(graph.replay, device=device, clock="device", budget_s=budget_s, min_samples=7, label="graph kernel")
    graph_kernel = summarize(per_kernel.samples_s / kernels, "kernel in a CUDA graph")
    launch = time_fn(graph.replay, device=device, clock="host", inner=10, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=7, label="graph replay launch")
    sync = time_fn(lambda: torch.cuda.synchronize(device), device=device, clock="host", inner=10, budget_s=budget_s, min_samples=7, label="synchronize")
    for t in (graph_kernel, launch, sync):
        if t.warning:
            warnings.append(t.warning)
    del one
    return dict(
        kernel_min_s=graph_kernel.stat(),
        graph_kernel_s=graph_kernel.stat(),
        graph_launch_s=launch.stat(),
        synchronize_s=sync.stat(),
    )
