"""Fixed per-call costs: host dispatch of one aten op, one nn.Module call, the smallest kernel,
CUDA-graph replay, and synchronize. These set the overhead regime that pure rooflines ignore.

Host costs are timed with the host clock over many back-to-back calls on tiny tensors, so the
device work is far shorter than the host's and the host is what is measured.
"""

from __future__ import annotations

import statistics

import numpy as np
import torch
import torch.nn.functional as F

from roofline.profile import Overheads
from roofline.timing import time_fn

ROUNDS = 5  # passes over the representative ops; the median pass of each op is kept
# Timing budget of the torch.compile stage (opt-in, after ~30 s of compiling): 7 rounds of four
# chains at ~0.14 s each, plus as much again of warm-up: ~8 s. At the plan's 0.05 s the ratios of
# run 22 spread by 0.8 (IQR/median).
COMPILED_BUDGET_S = 4.0
COMPILED_ROUNDS = 7
INNER = 100  # calls per timed repetition: one perf_counter reading is ~50 ns, one call ~5 us


def _host(fn, device, label, warnings, budget_s, inner=INNER):
    t = time_fn(fn, device=device, clock="host", inner=inner, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=7, label=label)
    if t.warning:
        warnings.append(t.warning)
    return t


def mix_of(ops: dict):
    """One pass of the mix: every representative op called once in turn."""
    calls = list(ops.values())

    def mix():
        for fn in calls:
            fn()

    return mix


def mix_alone_sum_s(dispatch_s_by_op: dict[str, float]) -> float:
    """The mix's ops, each priced at its time repeated alone: the sum of their dispatch costs (the
    representative view call makes two views, whose cost is stored per view)."""
    return sum(s * (2 if name == "view" else 1) for name, s in dispatch_s_by_op.items())


def _interleave_ratio(mix_s: float, round_by_op: dict) -> float:
    """Host time of all representative ops called in turn, over the sum of their times each
    repeated alone in the same round. Real code interleaves different ops, which a loop of one op
    hides (its code and branches stay hot); accuracy runs found real sequences ~1.2-1.5x the
    repeated-op sum."""
    alone = mix_alone_sum_s({name: t.median_s for name, t in round_by_op.items()})
    return mix_s / alone if alone > 0 else 1.0


def _module_call_cost(device: str, budget_s: float, warnings: list):
    """Host cost of one nn.Module call in context: an 8-layer Linear+ReLU nn.Sequential against the
    same calls made functionally, divided by the 16 module calls (a pass-through module alone
    under-measures it: real calls also go through Sequential's iteration and hook checks)."""
    from roofline.profile import Stat

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

    # A difference of two host timings: alternate them over several rounds and take the median
    # difference, so that drift between the two measurements does not land in the result.
    diffs, iqrs, n = [], [], 0
    for _ in range(2 * ROUNDS - 1):
        with_modules = _host(lambda: seq(x), device, "Sequential MLP", [], budget_s / ROUNDS, inner=10)
        without = _host(functional, device, "functional MLP", [], budget_s / ROUNDS, inner=10)
        diffs.append((with_modules.median_s - without.median_s) / 17)  # 16 layers + the Sequential
        iqrs.append((with_modules.iqr_s + without.iqr_s) / 17)
        n += min(with_modules.n, without.n)
    order = sorted(range(len(diffs)), key=lambda i: diffs[i])
    mid = order[len(order) // 2]
    return Stat(median_s=max(diffs[mid], 1e-9), iqr_s=iqrs[mid], samples=n)


def representative_ops(device: str) -> dict:
    """Small ops whose host dispatch cost stands for each op category in prediction."""
    x = torch.rand(8, 8, device=device)
    y = torch.rand(8, 8, device=device)
    w = torch.rand(8, 8, device=device)
    b = torch.rand(8, device=device)
    x4 = torch.rand(1, 8, 8, 8, device=device)
    wc = torch.rand(8, 8, 3, 3, device=device)
    mean, var = torch.zeros(8, device=device), torch.ones(8, device=device)
    return {
        "add": lambda: torch.add(x, y),
        "mul_scalar": lambda: x * 0.5,  # a Python number is wrapped into a tensor on every call
        "relu": lambda: torch.relu(x),
        "view": lambda: x.view(2, 4, 8).transpose(1, 2),  # two views, as model code reshapes: counted per call pair
        "conv2d": lambda: F.conv2d(x4, wc, padding=1),
        "batch_norm": lambda: F.batch_norm(x4, mean, var),
        "addmm": lambda: F.linear(x, w, b),
        "sum": lambda: torch.sum(x, dim=1),
        "softmax": lambda: torch.softmax(x, dim=-1),
        "layer_norm": lambda: F.layer_norm(x, (8,)),
        "cat": lambda: torch.cat([x, y]),
    }


def measure_overheads(device: str, *, budget_s: float, warnings: list, progress=None) -> Overheads:
    from roofline.timing import summarize

    # Host timings drift with whatever else the host runs: measure every op in each of ROUNDS passes
    # and keep, per op, the samples of its median pass, so one slow moment moves no figure.
    # The interleaving factor is a ratio of two host timings: each round times the mix right after
    # the ops alone, so drift between rounds cancels, and the median round's ratio is kept.
    ops = representative_ops(device)
    mix = mix_of(ops)
    rounds: dict[str, list] = {name: [] for name in ops}
    ratios = []
    for _ in range(ROUNDS):
        this_round = {}
        for name, fn in ops.items():
            t = _host(fn, device, f"dispatch {name}", [], budget_s / ROUNDS)
            if name == "view":  # the representative call makes two view ops
                t = summarize(t.samples_s / 2, "dispatch view")
            rounds[name].append(t)
            this_round[name] = t
        ratios.append(_interleave_ratio(_host(mix, device, "interleaved ops", [], budget_s / ROUNDS, inner=10).median_s, this_round))
        if progress:
            progress()
    by_op = {}
    for name, ts in rounds.items():
        middle = sorted(ts, key=lambda t: t.median_s)[len(ts) // 2]
        if middle.warning:
            warnings.append(middle.warning)
        by_op[name] = middle.stat()
    interleave = max(sorted(ratios)[len(ratios) // 2], 1.0)

    module_call = _module_call_cost(device, budget_s, warnings)
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
    per_kernel_samples = per_kernel.samples_s / kernels
    from roofline.timing import summarize

    graph_kernel = summarize(per_kernel_samples, "kernel in a CUDA graph")
    launch = _host(graph.replay, device, "graph replay launch", warnings, budget_s, inner=10)
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


def _compiled_chain(k: int):
    """k layers of GEMM + ReLU: Inductor emits a cuBLAS call and a Triton kernel per layer, the mix
    that compiled model code launches (a chain of bare GEMMs overstates the per-kernel cost 2x)."""

    def chain(x, w):
        for _ in range(k):
            x = torch.relu(torch.mm(x, w))
        return x

    return chain


def _compiled_chain_of_weights(k: int):
    """``_compiled_chain(k)`` with a weight tensor per layer, ``chain(x, w_1, ..., w_k)``: the same
    kernels and k - 1 more graph inputs, as a model's parameters are."""

    def chain(x, *ws):
        for w in ws[:k]:
            x = torch.relu(torch.mm(x, w))
        return x

    return chain


def single_process_compile():
    """Compile in this process. Inductor's default pool of compile workers starts with the first
    torch.compile and keeps the host's cores busy for seconds after it, which inflated host
    timings taken right after a compile by up to 2x (benchmarks/host_state_probe.py --after compile;
    run 14's compiled costs)."""
    from torch._inductor import config as inductor_config

    return inductor_config.patch(compile_threads=1)


def kernel_names(fn, device: str) -> list[str]:
    """Names of the device kernels (and memsets/copies) one call of ``fn`` launches, from the
    profiler. Call it after every timing: a profiler session leaves CUPTI subscribed and slows
    later launches 1.4-1.6x (benchmarks/host_state_probe.py)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize(device)
    return [e.name for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]


def _kernels_per_call(fn, device: str) -> int:
    return len(kernel_names(fn, device)) or 1


# The 8-layer chain with a weight per layer, beside ``_compiled_chain``'s (x, w): what each graph
# input beyond those 2 costs a compiled call (roofline.advice.COMPILED_CHAIN_INPUTS).
WEIGHTS_KEY = "8w"  # the 8-layer chain with a weight per layer: 8 - 1 more graph inputs


def compiled_ratios(rounds: list[dict], kernels: dict) -> tuple[list[float], list[float], list[float]]:
    """Per round, torch.compile's host cost per call, per kernel and per graph input, over the eager
    cost per kernel.

    ``rounds``: one dict per round of host seconds per call, keyed ``(mode, layers)`` with mode
    'compiled' or 'eager' and layers 2, 8 or ``WEIGHTS_KEY``; ``kernels``: kernels per call under
    the same keys. Per mode, the cost per kernel is the difference of the two chain lengths over the
    difference of their kernel counts; the compiled call cost is what the short chain leaves beyond
    its kernels. The cost per graph input is what the 8-layer chain with 8 weights costs beyond the
    one with a shared weight, per extra input, less eager's own difference (the same kernels; eager
    pays nothing per argument: run 35, -0.05 µs). Rounds without the weights chain give no input
    ratio (an empty third list).
    """
    call, kernel, per_input = [], [], []
    for row in rounds:
        per = {}
        for mode in ("compiled", "eager"):
            n2, n8 = kernels[mode, 2], kernels[mode, 8]
            per[mode] = max((row[mode, 8] - row[mode, 2]) / max(n8 - n2, 1), 1e-9)
        kernel.append(per["compiled"] / per["eager"])
        call.append(max(row["compiled", 2] - kernels["compiled", 2] * per["compiled"], 0.0) / per["eager"])
        if ("compiled", WEIGHTS_KEY) in row and ("eager", WEIGHTS_KEY) in row:
            extra = (row["compiled", WEIGHTS_KEY] - row["compiled", 8]) - (row["eager", WEIGHTS_KEY] - row["eager", 8])
            per_input.append(max(extra / (8 - 1), 0.0) / per["eager"])
    return call, kernel, per_input


def measure_compiled_overheads(device: str, *, budget_s: float, warnings: list, reference_s: float) -> dict:
    """Host cost of torch.compile'd code: per call and per launched kernel.

    Two chains of small GEMM + ReLU layers (2 and 8 layers) are timed compiled and eager, all four
    in each round; the difference of the two lengths gives a cost per kernel and the remainder a
    cost per call. Each round's compiled costs are taken as ratios to that round's eager cost per
    kernel, and stored times ``reference_s`` (the eager cost per kernel of the same chain as
    prediction prices it, ``curves.eager_chain_kernel_s``). Host speed drifts by tens of percent
    within minutes, and right after a compile it ran ~1.5x slow for a few seconds (run 21): a ratio
    of timings taken side by side cancels that, where two absolute figures taken apart do not.
    Returns {} when torch.compile is not usable here (no Triton, an old torch): prediction then
    falls back to eager dispatch costs and says so.
    """
    from roofline.profile import Stat

    try:
        import torch._dynamo  # noqa: F401

        x = torch.rand(64, 64, device=device)
        ws = [torch.rand(64, 64, device=device) / 64 for _ in range(8)]
        chains = {2: _compiled_chain(2), 8: _compiled_chain(8), WEIGHTS_KEY: _compiled_chain_of_weights(8)}
        args = {2: (x, ws[0]), 8: (x, ws[0]), WEIGHTS_KEY: (x, *ws)}
        eager = dict(chains)
        compiled = {}
        with single_process_compile():
            for k, chain in chains.items():
                fn = torch.compile(chain, dynamic=False)
                for _ in range(3):
                    fn(*args[k])
                torch.cuda.synchronize(device)
                compiled[k] = fn
        # Kernels are counted with the profiler only after every timing: a profiler session leaves
        # CUPTI subscribed and slows later launches 1.4-1.6x (benchmarks/host_state_probe.py).
        modes = (("compiled", compiled), ("eager", eager))
        timings = []
        for _ in range(COMPILED_ROUNDS):
            row = {}
            for mode, fns in modes:
                for k, fn in fns.items():
                    row[mode, k] = _host(lambda fn=fn, a=args[k]: fn(*a), device, f"{mode} chain of {k}", warnings,
                                         budget_s / COMPILED_ROUNDS / (2 * len(chains)), inner=20)
            timings.append(row)
        kernels = {(mode, k): _kernels_per_call(lambda fn=fn, a=args[k]: fn(*a), device) for mode, fns in modes for k, fn in fns.items()}
        seconds = [{key: t.median_s for key, t in row.items()} for row in timings]
        call_ratio, kernel_ratio, input_ratio = compiled_ratios(seconds, kernels)

        def stat(ratios: list[float]) -> Stat:
            q25, q75 = (float(v) for v in np.percentile(ratios, [25, 75]))
            return Stat(median_s=max(statistics.median(ratios) * reference_s, 1e-9), iqr_s=(q75 - q25) * reference_s, samples=len(ratios))

        return dict(compiled_call_s=stat(call_ratio), compiled_kernel_s=stat(kernel_ratio), compiled_input_s=stat(input_ratio))
    except Exception as e:  # noqa: BLE001 - any failure here only removes an optional figure
        warnings.append(f"torch.compile overhead not measured ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
        return {}
