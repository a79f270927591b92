"""Fused LSTM and GRU forward times on a GPU over shapes, sequence lengths and layers.

    python benchmarks/rnn_probe.py

Prints each configuration's device time (CUDA events, median of 20 after 3 warm-up calls) and its
time per layer-step. This is what showed that a cuDNN step costs 16-24 us almost regardless of
shape (benchmarks/gpu_runs/run18/rnn_probe.txt), hence calibrate/rnn.py.
"""

import torch
from torch import nn


def device_ms(fn, n: int = 20) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(n):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


# (input, hidden, batch, steps, layers)
CONFIGS = [(256, 512, 32, 100, 2), (512, 512, 32, 100, 1), (512, 512, 32, 50, 1), (256, 512, 32, 50, 1), (256, 256, 1, 50, 1),
           (1024, 1024, 1, 50, 1), (256, 256, 256, 50, 1), (1024, 1024, 256, 50, 1), (512, 512, 32, 50, 2)]


def main() -> None:
    with torch.no_grad():
        for dt in (torch.float32, torch.bfloat16):
            for kind in (nn.LSTM, nn.GRU):
                for inp, hidden, batch, steps, layers in CONFIGS:
                    m = kind(inp, hidden, num_layers=layers, batch_first=True, dtype=dt).cuda()
                    x = torch.randn(batch, steps, inp, device="cuda", dtype=dt)
                    ms = device_ms(lambda: m(x))
                    print(f"{kind.__name__} {dt} I={inp} H={hidden} B={batch} T={steps} L={layers}: {ms:.3f} ms,"
                          f" {ms * 1e3 / (steps * layers):.1f} us per layer-step", flush=True)


if __name__ == "__main__":
    main()
