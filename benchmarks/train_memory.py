"""Where a training step's device memory goes, measured against the prediction, on a GPU.

    python3 benchmarks/train_memory.py --profile P --only NAME ... [--out DIR]

For each case of ``benchmarks/train_check.py``: the predicted peak and its parts
(``report.training.memory.at_peak``); on the GPU, what is allocated before a step (and how much of it
the parameters, buffers, optimizer state and batch explain), the step's peak, and the blocks alive at
the peak grouped by the Python line that allocated them (from ``torch.cuda.memory``'s allocation
history over one step). The history is written to ``DIR/NAME.pickle`` for ``torch.cuda.memory``'s
viewer (https://pytorch.org/memory_viz).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.train_check import all_cases  # noqa: E402
from roofline.graph.training import TrainStep  # noqa: E402
from roofline.measure.train import RealStep  # noqa: E402
from roofline.pipeline import Analysis, Options, resolve_profile  # noqa: E402

MB = 1e6


def where(frames: list[dict]) -> str:
    """The innermost frame outside torch's own files: the line that asked for the memory."""
    for f in frames:
        name = f.get("filename", "")
        if "/torch/" not in name and "<" not in name:
            return f"{Path(name).name}:{f.get('line')} {f.get('name')}"
    return f"{Path(frames[0]['filename']).name}:{frames[0].get('line')} {frames[0].get('name')}" if frames else "?"


def live_at_peak(trace: list[dict]) -> tuple[int, dict[str, int]]:
    """Bytes allocated during the trace at its highest point, by allocating line."""
    live: dict[int, tuple[int, str]] = {}
    now = best = 0
    best_set: dict[int, tuple[int, str]] = {}
    for e in trace:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], where(e.get("frames", [])))
            now += e["size"]
            if now > best:
                best, best_set = now, dict(live)
        elif e["action"] == "free_completed" and e["addr"] in live:
            now -= live.pop(e["addr"])[0]
    by_line: dict[str, int] = defaultdict(int)
    for size, line in best_set.values():
        by_line[line] += size
    return best, dict(by_line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--only", nargs="+", required=True)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    profile, kind = resolve_profile(args.profile, "cuda")
    step = TrainStep(optimizer="adamw")
    for case in [c for c in all_cases() if any(s in c.name for s in args.only)]:
        with torch.device("meta"):
            model, a, k = case.build()
        analysis = Analysis.of(model, a, k, profile, Options(device=kind, train=step, batch_sweep=False), name=case.name)
        mem = analysis.training.memory
        print(f"== {case.name}: predicted peak {mem.peak_bytes / MB:.1f} MB in {mem.peak_phase}; parts "
              + ", ".join(f"{p} {b / MB:.1f}" for p, b in mem.at_peak.items()))
        del model
        model, a, k = case.build()
        real = RealStep(model, a, k, TrainStep(optimizer="adamw", implementation=analysis.graph.training.implementation), "cuda")
        for _ in range(3):
            real()
        torch.cuda.synchronize()
        real.optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        known = real.resident_bytes()
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.memory._record_memory_history(max_entries=500_000, stacks="python")
        real.run_after_zero_grad()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        snap = torch.cuda.memory._snapshot()
        torch.cuda.memory._record_memory_history(enabled=None)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            import pickle

            (args.out / f"{case.name.replace(':', '_')}.pickle").write_bytes(pickle.dumps(snap))
        print(f"   measured: before the step {before / MB:.1f} MB (parameters, buffers, state, batch: {known / MB:.1f} MB; "
              f"other {(before - known) / MB:.1f} MB); peak {peak / MB:.1f} MB")
        rise, by_line = live_at_peak(snap["device_traces"][torch.cuda.current_device()])
        print(f"   allocated during the step and alive at its peak: {rise / MB:.1f} MB; by line:")
        for line, size in sorted(by_line.items(), key=lambda kv: -kv[1])[:12]:
            print(f"     {size / MB:9.2f} MB  {line}")
        del real, model
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
