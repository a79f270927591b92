"""Recurrent layers (nn.LSTM, nn.GRU) at representative shapes: what cuDNN reaches on a GPU.

A fused RNN runs its time steps one after another, and on the H100 each step costs far more than
its gate GEMM on the matmul curve: 16-24 us per layer-step for LSTM and GRU at every shape from
batch 1 x hidden 256 to batch 256 x hidden 1024, in float32 and bfloat16
(benchmarks/rnn_probe.py, benchmarks/gpu_runs/run18/rnn_probe.txt), against
3-15 us for the GEMM alone. Run 14 priced the 2-layer LSTM of the accuracy suite at 14 us per
layer-step and measured 25.

Each point is one layer at two sequence lengths, so that a time per step (the slope) and a fixed
cost per layer call (the intercept: weight setup, the input projection's launch) separate.
Prediction prices a layer as fixed + steps x (step-to-GEMM ratio at the nearest points) x the gate
GEMM's matmul-curve time, so shapes beyond the calibrated ones still scale with their GEMMs.

GPU only. On the 2-core CPU two lengths do not separate a step from a call: in two back-to-back
runs of ``python benchmarks/rnn_probe.py --device cpu`` (benchmarks/results/rnn_probe_cpu_2core.txt)
the LSTM at batch 32 x hidden 512 gave a step of 374 and 474 us and a fixed cost of 9.3 and 5.1 ms,
and at batch 1 x hidden 256 a step of 35 and 19 us. The CPU keeps the GEMM-curve pricing.
"""

from __future__ import annotations

import torch

from calibrate.matmul import DTYPES
from roofline.profile import RnnCurve, RnnPoint
from roofline.timing import time_fn

# (batch, hidden); input size = hidden, one layer, unidirectional, batch_first
GPU_SHAPES = [(1, 256), (1, 1024), (32, 512), (256, 256), (256, 1024)]
GPU_SHAPES_QUICK = [(1, 256), (32, 512)]
STEPS = (16, 64)
KINDS = ("lstm", "gru")


def measure_rnn(dtype_name: str, shapes: list[tuple[int, int]], device: str, *, steps: tuple[int, int] = STEPS, budget_s: float, warnings: list, progress=None) -> RnnCurve:
    """Time one LSTM and one GRU layer forward per shape at two sequence lengths, with the
    host-speed index timed before, between and after (its median is the point's host_index_s):
    the layer launches every step from the host, and run 31's calibration met a host phase that
    made the batch-32 LSTM's step 32 us against 24 us in run 27's and 16.5 us in the models timed
    minutes later. Prediction puts the stage at the profile's host speed by its median index."""
    from roofline.host_speed import index_call, warm_index_sample_s

    dtype = DTYPES[dtype_name]
    mix = index_call(device)
    points = []
    with torch.no_grad():
        for kind in KINDS:
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
            for batch, hidden in shapes:
                layer = cls(hidden, hidden, num_layers=1, batch_first=True, device=device, dtype=dtype)
                inputs = [torch.randn(batch, t, hidden, device=device, dtype=dtype) for t in steps]
                for x in inputs:  # a new shape's first calls build cuDNN's plan: 4 ms in run 19
                    for _ in range(3):
                        layer(x)
                for attempt in range(2):
                    stats, beside = [], [warm_index_sample_s(mix)]
                    for t, x in zip(steps, inputs):
                        r = time_fn(
                            lambda: layer(x), device=device, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5,
                            label=f"{kind} {dtype_name} batch {batch} hidden {hidden} steps {t}",
                        )
                        if r.warning:
                            warnings.append(r.warning)
                        stats.append(r.stat())
                        beside.append(warm_index_sample_s(mix))
                    if stats[1].median_s > stats[0].median_s:
                        break
                else:
                    warnings.append(f"{kind} {dtype_name} batch {batch} hidden {hidden}: {steps[0]} steps timed slower than {steps[1]} twice; prediction skips this point")
                points.append(RnnPoint(kind=kind, batch=batch, input_size=hidden, hidden=hidden, steps_short=steps[0], steps_long=steps[1], time_short=stats[0], time_long=stats[1],
                                       host_index_s=sorted(beside)[1]))
                del layer
                if progress:
                    progress()
    return RnnCurve(dtype=dtype_name, points=points)
