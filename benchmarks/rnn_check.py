"""Fused recurrent layers (nn.LSTM, nn.GRU) timed end to end on the GPU and priced by a profile.

    python benchmarks/rnn_check.py --measure OUT.json              # on the GPU: time the layers
    python benchmarks/rnn_check.py --sweep OUT.json --profile P    # anywhere: price them

Calibration times one layer of each kind at five (batch, hidden) shapes; models stack layers and
run other sizes. Here: LSTM and GRU, hidden 256, 512 and 1024 (input the same), 1 and 2 layers, 64
steps, batch 1 and 16, float32, eval under no_grad, each module call timed end to end by the
shared protocol (``roofline.timing``, host included: a fused RNN launches from the host every
step) and priced as ``roofline advise`` prices the call (its whole predicted time).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.sweep_checks import timed_check_main  # noqa: E402

STEPS = 64


def cases():
    for kind in ("lstm", "gru"):
        for hidden in (256, 512, 1024):
            for layers in (1, 2):
                for batch in (1, 16):
                    yield dict(kind=kind, hidden=hidden, layers=layers, batch=batch, steps=STEPS)


def _layer(p: dict, device: str):
    cls = torch.nn.LSTM if p["kind"] == "lstm" else torch.nn.GRU
    return cls(p["hidden"], p["hidden"], num_layers=p["layers"], batch_first=True, device=device).eval()


def _label(p: dict) -> str:
    return f"{p['kind']:<4} hidden {p['hidden']:4d} layers {p['layers']} batch {p['batch']:2d}"


def _timed_call(p: dict):
    layer, x = _layer(p, "cuda"), torch.randn(p["batch"], p["steps"], p["hidden"], device="cuda")
    return torch.no_grad()(lambda: layer(x))


def predicted_s(profile, p: dict) -> float:
    """The whole time ``roofline advise`` predicts for one layer call on the GPU."""
    from roofline.pipeline import Analysis, Options

    with torch.device("meta"):
        layer = _layer(p, "meta")
        x = torch.empty(p["batch"], p["steps"], p["hidden"])
    return Analysis.of(layer, (x,), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False)).total_s


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "rnn", lambda: list(cases()), _timed_call, predicted_s, _label, budget_s=0.2))
