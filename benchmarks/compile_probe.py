"""What does torch.compile'd model code cost the host, per call and per launched kernel?

    python benchmarks/compile_probe.py [--device cuda]

The advice prices a compiled forward as a call cost plus a cost per launched kernel, both
calibrated on a compiled chain of GEMM + ReLU functions (calibrate/overhead.py). This probe checks
that against model code: for each case it prints the kernels one compiled call launches (names from
the profiler, counted), the host time to issue one call (no synchronize: the kernels are tiny, so
the host is the bottleneck), and the call-plus-synchronize time that the advice check compares,
eager and compiled alternated over rounds so that host drift lands on both alike.

``--inference-mode`` runs it all under torch.inference_mode(), as calibration did until run 22.

Cases: seed 003's Linear+ReLU nn.Sequential (hidden 128, batch 1; 2 and 8 layers), the
calibration's function chain of GEMM + ReLU (64x64; 2 and 8 layers), and the 8-layer chain with a
weight per layer (9 graph inputs against 2: what each graph input adds to a compiled call).
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from calibrate.overhead import _compiled_chain, _compiled_chain_of_weights, single_process_compile  # noqa: E402
from calibrate.overhead import kernel_names  # noqa: E402
from roofline.timing import time_fn  # noqa: E402

ROUNDS = 5


def seq_stack(hidden: int, layers: int, device: str) -> torch.nn.Module:
    mods = []
    for _ in range(layers):
        mods += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU(inplace=True)]
    return torch.nn.Sequential(*mods).to(device).eval()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--inference-mode", action="store_true", help="everything under torch.inference_mode() (as calibration ran until run 22) instead of no_grad")
    args = ap.parse_args()
    torch.set_grad_enabled(False)
    if args.inference_mode:
        with torch.inference_mode():
            return run(args.device, "inference_mode")
    return run(args.device, "no_grad")


def run(dev: str, grad_mode: str) -> int:

    cases = {}
    for layers in (2, 8):
        m = seq_stack(128, layers, dev)
        x = torch.randn(1, 128, device=dev)
        cases[f"Sequential Linear+ReLU h128 b1 x{layers}"] = (m, (x,))
    for layers in (2, 8):
        x = torch.rand(64, 64, device=dev)
        w = torch.rand(64, 64, device=dev) / 64
        cases[f"function mm+relu 64x64 x{layers}"] = (_compiled_chain(layers), (x, w))
    ws = [torch.rand(64, 64, device=dev) / 64 for _ in range(8)]
    cases["function mm+relu 64x64 x8, 8 weights"] = (_compiled_chain_of_weights(8), (x, *ws))

    compiled = {}
    with single_process_compile():
        for name, (fn, inputs) in cases.items():
            c = torch.compile(fn, dynamic=False)
            for _ in range(3):
                c(*inputs)
            torch.cuda.synchronize(dev)
            compiled[name] = c

    def issue(fn, inputs):
        return time_fn(lambda: fn(*inputs), device=dev, clock="host", inner=20, budget_s=0.15, warmup_budget_s=0.05, min_samples=7).median_s

    def with_sync(fn, inputs):
        def call():
            fn(*inputs)
            torch.cuda.synchronize(dev)

        return time_fn(call, device=dev, clock="host", inner=1, budget_s=0.15, warmup_budget_s=0.05, min_samples=10).median_s

    rows = collections.defaultdict(list)
    for r in range(ROUNDS):
        for name, (fn, inputs) in cases.items():
            rows[(name, "eager", "issue")].append(issue(fn, inputs))
            rows[(name, "compiled", "issue")].append(issue(compiled[name], inputs))
            rows[(name, "eager", "call+sync")].append(with_sync(fn, inputs))
            rows[(name, "compiled", "call+sync")].append(with_sync(compiled[name], inputs))

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(dev)}, {grad_mode}; medians over {ROUNDS} alternated rounds, us per call")
    kernels = {}
    for name, (fn, inputs) in cases.items():
        print(f"{name}:")
        for mode, f in (("eager", fn), ("compiled", compiled[name])):
            names = kernel_names(lambda: f(*inputs), dev)
            kernels[name, mode] = len(names)
            counts = collections.Counter(names)
            issue_us = [t * 1e6 for t in rows[(name, mode, "issue")]]
            sync_us = [t * 1e6 for t in rows[(name, mode, "call+sync")]]
            print(f"  {mode:<8} kernels {len(names):3d}  issue {statistics.median(issue_us):7.1f} us (rounds {' '.join(f'{v:.0f}' for v in issue_us)})"
                  f"  call+sync {statistics.median(sync_us):7.1f} us (rounds {' '.join(f'{v:.0f}' for v in sync_us)})")
            for k, n in counts.most_common():
                print(f"      {n:3d} x {k[:110]}")
    for family in ("Sequential Linear+ReLU h128 b1", "function mm+relu 64x64"):
        for mode in ("eager", "compiled"):
            short, long_ = (f"{family} x2", f"{family} x8")
            n2, n8 = kernels[short, mode], kernels[long_, mode]
            per_round = [(b - a) / max(n8 - n2, 1) * 1e6 for a, b in zip(rows[(short, mode, "issue")], rows[(long_, mode, "issue")])]
            call = [a * 1e6 - n2 * p for a, p in zip(rows[(short, mode, "issue")], per_round)]
            print(f"{family} {mode}: issue per kernel {statistics.median(per_round):.2f} us, per call {statistics.median(call):.1f} us "
                  f"(kernels {n2} -> {n8}; per-kernel rounds {' '.join(f'{v:.1f}' for v in per_round)})")
    for mode in ("eager", "compiled"):
        shared, own = rows[("function mm+relu 64x64 x8", mode, "issue")], rows[("function mm+relu 64x64 x8, 8 weights", mode, "issue")]
        per_input = [(b - a) / 7 * 1e6 for a, b in zip(shared, own)]
        print(f"function mm+relu 64x64 x8 {mode}: each of 7 more graph inputs adds {statistics.median(per_input):.2f} us per call "
              f"(rounds {' '.join(f'{v:.1f}' for v in per_input)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
