"""torch.compile's host costs (``roofline calibrate --with-compile``): what one call into a
compiled function, each kernel its generated code launches, and each graph input cost the host,
beside eager dispatch of the same kernels."""

from __future__ import annotations

import statistics

import numpy as np
import torch

from roofline.schema.profile import Stat
from roofline.timing import Slot, time_rounds

# Timing budget of this opt-in stage (after ~30 s of compiling): 7 rounds of six chains.
COMPILED_BUDGET_S = 4.0
COMPILED_ROUNDS = 7


def compiled_chain(k: int):
    """k layers of GEMM + ReLU: Inductor emits a cuBLAS call and a Triton kernel per layer, the mix
    that compiled model code launches (a chain of bare GEMMs overstates the per-kernel cost 2x)."""

    def chain(x, w):
        for _ in range(k):
            x = torch.relu(torch.mm(x, w))
        return x

    return chain


def compiled_chain_of_weights(k: int):
    """``compiled_chain(k)`` with a weight tensor per layer, ``chain(x, w_1, ..., w_k)``: the same
    kernels and k - 1 more graph inputs, as a model's parameters are."""

    def chain(x, *ws):
        for w in ws[:k]:
            x = torch.relu(torch.mm(x, w))
        return x

    return chain


def kernel_names(fn, device: str) -> list[str]:
    """Names of the device kernels (and memsets/copies) one call of ``fn`` launches, from the
    profiler. Call it after every timing: a profiler session leaves CUPTI subscribed and slows
    every later launch from the process."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize(device)
    return [e.name for e in prof.events() if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA]


def _kernels_per_call(fn, device: str) -> int:
    return len(kernel_names(fn, device)) or 1


# The 8-layer chain with a weight per layer, beside ``compiled_chain``'s (x, w): what each graph
# input beyond those 2 costs a compiled call (roofline.advice.compiled.COMPILED_CHAIN_INPUTS).
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
    pays next to nothing per argument). Rounds without the weights chain give no input ratio (an
    empty third list).
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
    """Host cost of torch.compile'd code: per call, per launched kernel and per graph input.

    Chains of small GEMM + ReLU layers (2 and 8 layers, and 8 with a weight each) are timed compiled
    and eager, all six in each round; the difference of the two lengths gives a cost per kernel and
    the remainder a cost per call. Each round's compiled costs are taken as ratios to that round's
    eager cost per kernel, and stored times ``reference_s`` (the eager cost per kernel of the same
    chain as prediction prices it, ``roofline.model.host.eager_chain_kernel_s``): host speed drifts
    within minutes and runs slow for seconds right after a compile, and a ratio of timings taken
    side by side cancels that where two absolute figures taken apart do not. Returns {} when
    torch.compile is not usable here (no Triton, an old torch): prediction then prices compiled
    launches like eager dispatch.
    """
    from roofline.measure.alternatives import single_process_compile

    try:
        import torch._dynamo  # noqa: F401

        x = torch.rand(64, 64, device=device)
        ws = [torch.rand(64, 64, device=device) / 64 for _ in range(8)]
        chains = {2: compiled_chain(2), 8: compiled_chain(8), WEIGHTS_KEY: compiled_chain_of_weights(8)}
        args = {2: (x, ws[0]), 8: (x, ws[0]), WEIGHTS_KEY: (x, *ws)}
        compiled = {}
        with single_process_compile():
            for k, chain in chains.items():
                fn = torch.compile(chain, dynamic=False)
                for _ in range(3):
                    fn(*args[k])
                torch.cuda.synchronize(device)
                compiled[k] = fn
        modes = (("compiled", compiled), ("eager", chains))
        share = budget_s / COMPILED_ROUNDS / (2 * len(chains))
        slots = {(mode, k): Slot(lambda fn=fn, a=args[k]: fn(*a), calls=20, seconds=share) for mode, fns in modes for k, fn in fns.items()}
        got = time_rounds(slots, rounds=COMPILED_ROUNDS, warmup_rounds=1, device=device)
        # Kernels are counted with the profiler only after every timing (``kernel_names``).
        kernels = {key: _kernels_per_call(slot.fn, device) for key, slot in slots.items()}
        seconds = [{key: float(np.median(got[key][i])) for key in slots} for i in range(COMPILED_ROUNDS)]
        call_ratio, kernel_ratio, input_ratio = compiled_ratios(seconds, kernels)

        def stat(ratios: list[float]) -> Stat:
            q25, q75 = (float(v) for v in np.percentile(ratios, [25, 75]))
            return Stat(median_s=max(statistics.median(ratios) * reference_s, 1e-9), iqr_s=(q75 - q25) * reference_s, samples=len(ratios))

        return dict(compiled_call_s=stat(call_ratio), compiled_kernel_s=stat(kernel_ratio), compiled_input_s=stat(input_ratio))
    except Exception as e:  # noqa: BLE001 - any failure here only removes an optional figure
        warnings.append(f"torch.compile overhead not measured ({type(e).__name__}: {str(e).splitlines()[0][:100]})")
        return {}
