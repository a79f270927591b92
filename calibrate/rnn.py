"""Recurrent layers (nn.LSTM, nn.GRU) at representative shapes: what cuDNN reaches on a GPU.

A fused RNN runs its time steps one after another, and every step is launched from the host: on
the H100 a float32 step of batch 1 takes about 9.5 us whatever its hidden size (256-1024), a GEMV
and a gate kernel launched onto an idle GPU, and batch 256 x hidden 1024 35 us (the shipped
profile's stage: ``python -m calibrate.refresh PROFILE --stage rnn``).

Each point is one layer at two sequence lengths, so that a time per step (the slope) and a fixed
cost per layer call (the intercept: weight setup, the input projection's launch) separate. Each
call is timed as a model's forward is predicted and measured: one call, then a synchronize, on the
host's clock. The steps' kernels are short and each waits for the one before, so cuDNN launches
them onto an idle GPU; calls timed back to back without a synchronize keep the GPU's queue full and
run faster per call (x1.22 in the median on the H100, x1.60 on the H200: ``benchmarks/rnn_check.py
--pipelined`` times both), which no single forward sees.
Prediction prices a layer as fixed + steps x (step-to-GEMM ratio at the nearest points) x the gate
GEMM's matmul-curve time, so shapes beyond the calibrated ones still scale with their GEMMs.

GPU only. On a 2-core CPU two lengths do not separate a step from a call (two runs of one shape
gave steps 1.3-1.8x apart and fixed costs 2x apart), so the CPU keeps the GEMM-curve pricing.
"""

from __future__ import annotations

import torch

from calibrate.matmul import DTYPES
from roofline.schema.profile import RnnCurve, RnnPoint
from roofline.timing import sync, time_fn

# (batch, hidden); input size = hidden, one layer, unidirectional, batch_first
GPU_SHAPES = [(1, 256), (1, 1024), (32, 512), (256, 256), (256, 1024)]
GPU_SHAPES_QUICK = [(1, 256), (32, 512)]
STEPS = (16, 64)
KINDS = ("lstm", "gru")


def measure_rnn(dtype_name: str, shapes: list[tuple[int, int]], device: str, *, steps: tuple[int, int] = STEPS, budget_s: float, warnings: list, progress=None) -> RnnCurve:
    """Time one LSTM and one GRU layer forward per shape at two sequence lengths, with the
    host-speed index timed before, between and after (its median is the point's host_index_s):
    the layer launches every step from the host, so a slow host phase during calibration shows in
    its steps. Prediction puts the stage at the profile's host speed by its median index."""
    from roofline.measure.host_speed import index_call, index_sample_s

    dtype = DTYPES[dtype_name]
    mix = index_call(device)
    points = []
    with torch.no_grad():
        for kind in KINDS:
            cls = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
            for batch, hidden in shapes:
                layer = cls(hidden, hidden, num_layers=1, batch_first=True, device=device, dtype=dtype)
                inputs = [torch.randn(batch, t, hidden, device=device, dtype=dtype) for t in steps]
                for x in inputs:  # a new shape's first calls build cuDNN's plan (milliseconds)
                    for _ in range(3):
                        layer(x)
                for attempt in range(2):
                    stats, beside = [], [index_sample_s(mix)]
                    for t, x in zip(steps, inputs):
                        r = time_fn(
                            lambda: (layer(x), sync(device)), device=device, clock="host", inner=1, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=5,
                            label=f"{kind} {dtype_name} batch {batch} hidden {hidden} steps {t}",
                        )
                        if r.warning:
                            warnings.append(r.warning)
                        stats.append(r.stat())
                        beside.append(index_sample_s(mix))
                    if stats[1].median_s > stats[0].median_s:
                        break
                else:
                    warnings.append(f"{kind} {dtype_name} batch {batch} hidden {hidden}: {steps[0]} steps timed slower than {steps[1]} twice; prediction skips this point")
                points.append(RnnPoint(kind=kind, batch=batch, input_size=hidden, hidden=hidden, steps_short=steps[0], steps_long=steps[1], time_short=stats[0], time_long=stats[1],
                                       host_index_s=sorted(beside)[1]))
                del layer
                if progress:
                    progress()
    return RnnCurve(dtype=dtype_name, points=points, synchronized=True)
