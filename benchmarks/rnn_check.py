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

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.sweep_checks import error_line, priced_lines  # noqa: E402

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


def measure(path: str) -> None:
    from roofline.timing import time_fn

    points = []
    with torch.no_grad():
        for p in cases():
            layer = _layer(p, "cuda")
            x = torch.randn(p["batch"], p["steps"], p["hidden"], device="cuda")
            t = time_fn(lambda: layer(x), device="cuda", budget_s=0.2, label=_label(p))
            points.append(dict(p, median_s=t.stat().median_s))
            print(f"{_label(p)}: {t.stat().median_s * 1e3:8.3f} ms", flush=True)
    Path(path).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, points=points), indent=1))


def predicted_s(profile, p: dict) -> float:
    """The whole time ``roofline advise`` predicts for one layer call on the GPU."""
    from roofline.pipeline import Analysis, Options

    with torch.device("meta"):
        layer = _layer(p, "meta")
        x = torch.empty(p["batch"], p["steps"], p["hidden"])
    return Analysis.of(layer, (x,), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False)).total_s


def sweep(path: str, profile: str) -> None:
    from roofline.pipeline import resolve_profile

    prof, _ = resolve_profile(profile, "cuda")
    points = json.loads(Path(path).read_text())["points"]
    print("rnn: " + error_line(priced_lines(points, lambda p: predicted_s(prof, p), _label)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--sweep", metavar="OUT.json")
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    args = ap.parse_args()
    if args.measure:
        measure(args.measure)
    if args.sweep:
        sweep(args.sweep, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
