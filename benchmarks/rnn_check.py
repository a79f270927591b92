"""Fused recurrent layers (nn.LSTM, nn.GRU) timed end to end on the GPU and priced by a profile.

    python benchmarks/rnn_check.py --measure OUT.json [--pipelined]   # on the GPU: time the layers
    python benchmarks/rnn_check.py --sweep OUT.json --profile P       # anywhere: price them

Calibration times one layer of each kind at five (batch, hidden) shapes; models stack layers and
run other sizes. Here: LSTM and GRU, hidden 256, 512 and 1024 (input the same), 1 and 2 layers, 64
steps, batch 1 and 16, float32, eval under no_grad, each module call timed as a forward is (the
shared protocol, ``roofline.timing``, on the host's clock, a synchronize after each call: a fused
RNN launches from the host every step) and priced as ``roofline advise`` prices the call (its whole
predicted time, synchronize included). ``--pipelined`` also times every layer back to back on the
device's clock, which keeps the GPU's queue full and runs faster per call; the sweep prints their
ratio and prices the synchronized points only (a record whose points name no protocol was timed
back to back: all its points are priced).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.sweep_checks import error_line, priced_lines, time_points  # noqa: E402

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
    return f"{p['kind']:<4} hidden {p['hidden']:4d} layers {p['layers']} batch {p['batch']:2d} {_protocol(p)}"


def _points(args) -> list[dict]:
    protocols = ("synchronized", "pipelined") if args.pipelined else ("synchronized",)
    return [dict(p, protocol=protocol) for p in cases() for protocol in protocols]


def _args(ap):
    ap.add_argument("--pipelined", action="store_true", help="with --measure: also time calls back to back on the device's clock")


def _protocol(p: dict) -> str:
    """How a point was timed: "synchronized" or "pipelined" (a point that names none: back to back)."""
    return p.get("protocol", "pipelined")


def _timed_call(p: dict):
    layer, x = _layer(p, "cuda"), torch.randn(p["batch"], p["steps"], p["hidden"], device="cuda")
    if _protocol(p) == "pipelined":
        return torch.no_grad()(lambda: layer(x))
    return torch.no_grad()(lambda: (layer(x), torch.cuda.synchronize()))


def _clock(p: dict) -> str:
    return "device" if _protocol(p) == "pipelined" else "host"


def predicted_s(profile, p: dict) -> float:
    """The whole time ``roofline advise`` predicts for one layer call on the GPU."""
    from roofline.pipeline import Analysis, Options

    with torch.device("meta"):
        layer = _layer(p, "meta")
        x = torch.empty(p["batch"], p["steps"], p["hidden"])
    return Analysis.of(layer, (x,), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False)).total_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--sweep", metavar="OUT.json")
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    _args(ap)
    args = ap.parse_args()
    if args.measure:
        time_points(args.measure, _points(args), _timed_call, _label, budget_s=0.2, clock_of=_clock)
    if args.sweep:
        from roofline.pipeline import resolve_profile

        profile, _ = resolve_profile(args.profile, "cuda")
        recorded = json.loads(Path(args.sweep).read_text())["points"]
        priced = [p for p in recorded if _protocol(p) == "synchronized"] or recorded
        print("rnn: " + error_line(priced_lines(priced, lambda p: predicted_s(profile, p), _label)))
        key = lambda p: (p["kind"], p["hidden"], p["layers"], p["batch"])  # noqa: E731
        pipelined = {key(p): p["median_s"] for p in recorded if _protocol(p) == "pipelined"}
        ratios = sorted(p["median_s"] / pipelined[key(p)] for p in priced if _protocol(p) == "synchronized" and key(p) in pipelined)
        if ratios:
            print(f"synchronized over pipelined calls: median x{statistics.median(ratios):.2f}, x{ratios[0]:.2f}-x{ratios[-1]:.2f} over {len(ratios)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
