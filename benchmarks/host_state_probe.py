"""Does anything earlier in a process change the host cost of eager launches later in it?

    python benchmarks/host_state_probe.py --after profiler [--device cuda]
    TEARDOWN_CUPTI=1 python benchmarks/host_state_probe.py --after profiler
    python benchmarks/host_state_probe.py --after compile

Benchmarks measure many models in one process, and the measurement of one model may leave the
process in a state that slows the next:
- ``profiler``: a torch.profiler session with CUDA activities. Kineto's CUPTI subscription is not
  torn down when the profiler stops unless TEARDOWN_CUPTI=1 (pytorch/pytorch#144455), and CUPTI
  callbacks sit on every CUDA runtime call.
- ``compile``: a torch.compile, whose worker processes may still be busy when the next
  measurement starts.

Each probe (an 8-layer Linear+ReLU stack at batch 1, the same with in-place ReLUs, one small
``add``, and a 512^3 matmul on the host CPU in two layouts) is timed fresh, right after the event, and again 5 s later. Times are per forward (or
per ``add``), medians of the shared timing protocol, in microseconds.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from roofline.timing import time_fn  # noqa: E402


def stack(inplace: bool, device: str):
    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(128, 128), torch.nn.ReLU(inplace=inplace)]
    return torch.nn.Sequential(*layers).to(device).eval()


def probes(device: str) -> dict:
    x = torch.rand(1, 128, device=device)
    a, b = torch.rand(64, device=device), torch.rand(64, device=device)
    relu, relu_ = stack(False, device), stack(True, device)

    def forward(model):
        def call():
            model(x)
            if device.startswith("cuda"):
                torch.cuda.synchronize(device)

        return call

    # The host CPU's matmul as calibration times it (a weight-style transposed right operand, out=)
    # and as seed 000 writes it: the placement sweep found the calibrated CPU curve 1.5-3x slow.
    m = torch.randn(512, 512)
    w = torch.randn(512, 512).t()
    out = torch.empty(512, 512)
    return {
        "8x(Linear+ReLU) b1, forward + sync": (forward(relu), 1, device),
        "8x(Linear+ReLU inplace) b1, forward + sync": (forward(relu_), 1, device),
        "add 64 floats, host issue": (lambda: torch.add(a, b), 20, device),
        "CPU mm 512^3, (n,k).t() operand, out=": (lambda: torch.mm(m, w, out=out), 1, "cpu"),
        "CPU a @ a 512^3": (lambda: m @ m, 1, "cpu"),
    }


def measure(device: str, fns: dict) -> dict:
    out = {}
    with torch.no_grad():
        for label, (fn, inner, where) in fns.items():
            t = time_fn(fn, device=where, clock="host", inner=inner, budget_s=0.5, warmup_budget_s=0.2, min_samples=15)
            out[label] = t.median_s * 1e6
    return out


def event(kind: str, device: str) -> None:
    if kind == "profiler":
        from torch.profiler import ProfilerActivity, profile

        acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
        y = torch.rand(256, 256, device=device)
        with profile(activities=acts):
            for _ in range(5):
                torch.mm(y, y).relu_()
            if device.startswith("cuda"):
                torch.cuda.synchronize(device)
    elif kind == "compile":
        fn = torch.compile(lambda t: torch.relu(t @ t) + 1.0)
        fn(torch.rand(64, 64, device=device))
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--after", choices=["profiler", "compile"], required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    fns = probes(args.device)
    phases = {"fresh": measure(args.device, fns)}
    event(args.after, args.device)
    phases[f"right after {args.after}"] = measure(args.device, fns)
    time.sleep(5)
    phases[f"5 s after {args.after}"] = measure(args.device, fns)
    teardown = os.environ.get("TEARDOWN_CUPTI", "unset")
    print(f"host state probe on {args.device}, torch {torch.__version__}, TEARDOWN_CUPTI={teardown}  (us, median)")
    names = list(phases)
    print(f"{'probe':<46}" + "".join(f"{n:>26}" for n in names))
    for label in fns:
        base = phases["fresh"][label]
        cells = [f"{phases[n][label]:>12.1f} ({phases[n][label] / base:4.2f}x)" for n in names]
        print(f"{label:<46}" + "".join(f"{c:>26}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
