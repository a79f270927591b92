"""Fused LSTM and GRU forward times over shapes, sequence lengths and layers.

    python benchmarks/rnn_probe.py [--device cuda|cpu]

Prints each configuration's median time by the project's timing protocol (``roofline.timing``:
device time on a GPU, wall time on the CPU) and its time per layer-step.

- On the H100 this showed that a cuDNN step costs 16-24 us almost regardless of shape
  (benchmarks/gpu_runs/run18/rnn_probe.txt), hence calibrate/rnn.py.
- On the CPU it pairs 16 and 64 steps of one layer. That is how calibration would separate a step
  from a call; oneDNN's LSTM is not linear in the steps there, so the CPU keeps the GEMM curve.
"""

import argparse
import sys
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from roofline.timing import time_fn  # noqa: E402

# (input, hidden, batch, steps, layers)
GPU_CONFIGS = [(256, 512, 32, 100, 2), (512, 512, 32, 100, 1), (512, 512, 32, 50, 1), (256, 512, 32, 50, 1), (256, 256, 1, 50, 1),
               (1024, 1024, 1, 50, 1), (256, 256, 256, 50, 1), (1024, 1024, 256, 50, 1), (512, 512, 32, 50, 2)]
CPU_CONFIGS = [(256, 256, 1, 16, 1), (256, 256, 1, 64, 1), (512, 512, 32, 16, 1), (512, 512, 32, 64, 1)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    device = ap.parse_args().device
    gpu = device.startswith("cuda")
    with torch.no_grad():
        for dt in (torch.float32, torch.bfloat16) if gpu else (torch.float32,):
            for kind in (nn.LSTM, nn.GRU):
                for inp, hidden, batch, steps, layers in GPU_CONFIGS if gpu else CPU_CONFIGS:
                    m = kind(inp, hidden, num_layers=layers, batch_first=True, dtype=dt, device=device)
                    x = torch.randn(batch, steps, inp, device=device, dtype=dt)
                    ms = time_fn(lambda: m(x), device=device, budget_s=0.2, min_samples=20).median_s * 1e3
                    print(f"{kind.__name__} {dt} I={inp} H={hidden} B={batch} T={steps} L={layers}: {ms:.3f} ms,"
                          f" {ms * 1e3 / (steps * layers):.1f} us per layer-step", flush=True)


if __name__ == "__main__":
    main()
