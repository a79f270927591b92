"""How a fused cuDNN RNN's time grows with layers and directions on a GPU: is a bidirectional layer
two layers' time (the directions one after another) or less (run side by side)?

    python benchmarks/rnn_directions.py [--json OUT.json]

Times nn.GRU and nn.LSTM (input 64, hidden 256, 100 steps, batch first) at batch 1 and 16, with 1
and 2 layers, one and two directions, in eval under no_grad: the median of 50 synchronized forwards
after a warm-up, and prints each time with its ratio to the one-layer, one-direction time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch
from torch import nn


def timed(fn, runs: int = 50) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    args = ap.parse_args()
    rows = []
    with torch.no_grad():
        for cell in (nn.GRU, nn.LSTM):
            for batch in (1, 16):
                x = torch.randn(batch, 100, 64, device="cuda")
                base = None
                for layers in (1, 2):
                    for bidirectional in (False, True):
                        m = cell(64, 256, layers, batch_first=True, bidirectional=bidirectional).cuda().eval()
                        s = timed(lambda: m(x))
                        base = base or s
                        rows.append(dict(cell=cell.__name__, batch=batch, layers=layers, bidirectional=bidirectional, seconds=s))
                        print(f"{cell.__name__} b{batch} layers {layers} {'bi ' if bidirectional else 'uni'}: {s * 1e3:7.3f} ms  x{s / base:.2f} of one layer, one direction", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
