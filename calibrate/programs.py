"""Host cost of whole eager programs against the host cost the representative ops add up to.

Dispatch costs are timed on representative ops in tight loops (``calibrate.overhead``), and the
interleaving factor covers a mix of a dozen kinds. A model's forward is a larger program: hundreds
of Python frames of module code between its ops, whose instructions and branch history no longer
stay in the host's caches. Two reference programs, the kinds of code models are made of (a
pre-norm transformer stack and a conv/batch-norm/ReLU stack, written with torch.nn at sizes where
every kernel is shorter than its launch), are timed end to end in rounds alternating with the
host-speed index, and predicted from the profile's own overheads at the host speed of those rounds;
the median ratio of measured to predicted is ``Overheads.program_factor``, which prediction applies
to every eager host cost. On the H100 machine the zoo of real models wanted 1.25-1.35 of the mix's
costs (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import statistics

import numpy as np
import torch
from torch import nn

from roofline.timing import Slot, sync, time_rounds

ROUNDS = 5


class _Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = 4

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


def reference_programs(device: str) -> dict[str, tuple[nn.Module, tuple]]:
    """(module, inputs) of each reference program, on ``device``, in eval mode."""
    transformer = nn.Sequential(*[_Block(64) for _ in range(4)], nn.LayerNorm(64), nn.Linear(64, 100))
    cnn = nn.Sequential(
        *[m for i in range(6) for m in (nn.Conv2d(3 if i == 0 else 16, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True))],
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
    )
    return {
        "transformer": (transformer.to(device).eval(), (torch.randn(1, 16, 64, device=device),)),
        "cnn": (cnn.to(device).eval(), (torch.randn(1, 3, 16, 16, device=device),)),
    }


def measure_program_factor(device: str, profile, kind: str, *, budget_s: float, warnings: list) -> float:
    """The median over the reference programs of measured / predicted host-bound time, the
    prediction taken at the host speed the index showed in the same rounds."""
    from roofline.measure.host_speed import index_call, index_slot
    from roofline.model.host import calibrated_index_s
    from roofline.pipeline import Analysis, Options

    overheads = profile.part(kind).measurements.overheads
    mix = index_call(device, overheads.dispatch_by_op_s)
    factors = []
    with torch.no_grad():
        for name, (model, args) in reference_programs(device).items():
            def call(model=model, args=args):
                model(*args)
                sync(device)

            got = time_rounds({"index": index_slot(mix), "model": Slot(call, seconds=budget_s / ROUNDS)}, rounds=ROUNDS, warmup_rounds=1, device=device)
            scale = statistics.median(np.concatenate(got["index"]).tolist()) / calibrated_index_s(overheads)
            measured = statistics.median(np.concatenate(got["model"]).tolist())
            analysis = Analysis.of(model, args, None, profile, Options(device=kind, batch_sweep=False, capture_device=device.split(":")[0]), name=name)
            predicted = analysis.at_host_scale(scale).total_s
            factors.append(measured / predicted)
    factor = statistics.median(factors)
    if not 0.5 < factor < 3.0:
        warnings.append(f"program factor {factor:.2f} (reference programs {', '.join(f'{f:.2f}' for f in factors)}) is far from 1; kept at 1")
        return 1.0
    return factor
