"""Where does eager host time per op go? Probes that separate the candidate causes.

    python benchmarks/host_overhead_probe.py [--device cuda]

Accuracy runs found real chains of small ops costing ~2x the host time per op that a loop of
one repeated tiny op measures. Each line here times host issue only (no synchronize inside the
timed region unless it says so), per op, with the shared timing protocol:
- one op repeated, on tiny (8x8) and on large (4M-element) tensors: does tensor size matter?
- a chain of 16 different pointwise ops, tiny and large: does interleaving different ops matter?
- the same chain with Python-scalar operands vs tensor operands;
- an 8-layer Linear+ReLU nn.Sequential at batch 1 vs the same calls made functionally.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roofline.timing import time_fn  # noqa: E402


def chain(y, half=0.5, one=1.0, quarter=0.25):
    """16 different pointwise ops; the three operands are Python numbers unless tensors are passed."""
    y = y * half
    y = y + one
    y = torch.sin(y)
    y = torch.cos(y)
    y = torch.exp(y)
    y = torch.log1p(y)
    y = torch.tanh(y)
    y = torch.sigmoid(y)
    y = torch.neg(y)
    y = torch.abs(y)
    y = torch.sqrt(y)
    y = y * y
    y = torch.relu(y - quarter)
    y = torch.clamp(y, max=1.0)
    return y


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    dev = args.device
    rows = []

    def host(label, fn, ops, inner=20):
        t = time_fn(fn, device=dev, clock="host", inner=inner, budget_s=0.3, warmup_budget_s=0.2, min_samples=7)
        rows.append((label, t.median_s / ops * 1e6, t.relative_spread))

    def e2e(label, fn, ops):
        def call():
            fn()
            if dev.startswith("cuda"):
                torch.cuda.synchronize()

        t = time_fn(call, device=dev, clock="host", inner=1, budget_s=0.3, warmup_budget_s=0.2, min_samples=7)
        rows.append((label, t.median_s / ops * 1e6, t.relative_spread))

    with torch.no_grad():
        for n, name in ((64, "tiny"), (1 << 22, "4M")):
            x = torch.rand(n, device=dev)
            y = torch.rand(n, device=dev)
            host(f"add repeated, {name}", lambda: torch.add(x, y), 1)
            host(f"sin repeated, {name}", lambda: torch.sin(x), 1)
            host(f"mul by python scalar repeated, {name}", lambda: x * 0.5, 1)
            host(f"chain of 16, {name}, host issue", lambda: chain(x), 16, inner=5)
            e2e(f"chain of 16, {name}, + synchronize", lambda: chain(x), 16)
            h, o, q = (torch.tensor(v, device=dev) for v in (0.5, 1.0, 0.25))
            host(f"chain of 16 tensor operands, {name}", lambda: chain(x, h, o, q), 16, inner=5)
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(128, 128), torch.nn.ReLU()]
        seq = torch.nn.Sequential(*layers).to(dev).eval()
        x = torch.rand(1, 128, device=dev)
        ws = [(m.weight, m.bias) for m in seq if isinstance(m, torch.nn.Linear)]

        def functional(x=x):
            for w, b in ws:
                x = torch.relu(F.linear(x, w, b))
            return x

        host("Sequential 8x(Linear+ReLU) b1, host issue, per layer", lambda: seq(x), 8, inner=5)
        host("functional 8x(linear+relu) b1, host issue, per layer", functional, 8, inner=5)
        e2e("Sequential 8x(Linear+ReLU) b1, + synchronize, per layer", lambda: seq(x), 8)
    print(f"{'probe':<60}{'us per op':>10}{'IQR/med':>9}")
    for label, us, spread in rows:
        print(f"{label:<60}{us:>10.2f}{spread:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
