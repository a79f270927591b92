"""GPU copies of permuted tensors, timed and priced by a profile: how a warp's reads gather.

    python benchmarks/permute_copies.py --measure OUT.json     # on the GPU: time the shapes
    python benchmarks/permute_copies.py --sweep OUT.json --profile P   # anywhere: price them

A (batch, c, side, side) tensor made contiguous with its c dimension moved last (NCHW to NHWC, as
CaiT's talking heads and channels-last conversions do) and back (NHWC to NCHW), c of 2-256, float32
and float16, about 2^22 and 2^24 elements; each timed by the shared protocol (``roofline.timing``)
and priced as ``roofline advise`` prices the copy. Every inner run is one element long; a warp of
ATen's copy kernel reads c-wide stretches (c last) or stretches of up to 32 (c first).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from benchmarks.sweep_checks import DTYPES, kernel_s, timed_check_main  # noqa: E402

CHANNELS = [2, 4, 8, 16, 32, 64, 256]


def _points() -> list[dict]:
    points = []
    for dtype in ("float32", "float16"):
        for elements in (1 << 22, 1 << 24):
            for c in CHANNELS:
                side = round((elements / 32 / c) ** 0.5)
                for direction in ("c_last", "c_first"):
                    points.append(dict(dtype=dtype, batch=32, c=c, side=side, direction=direction))
    return points


def _source(p: dict, device: str):
    shape = (p["batch"], p["c"], p["side"], p["side"]) if p["direction"] == "c_last" else (p["batch"], p["side"], p["side"], p["c"])
    return torch.randn(*shape, device=device, dtype=DTYPES[p["dtype"]])


def permuted_copy(x, direction: str):
    return (x.permute(0, 2, 3, 1) if direction == "c_last" else x.permute(0, 3, 1, 2)).contiguous()


def _timed_call(p: dict):
    x = _source(p, "cuda")
    return lambda: permuted_copy(x, p["direction"])


def predicted_s(profile, p: dict) -> float:
    with torch.device("meta"):
        x = _source(p, "meta")
    return kernel_s(lambda x: permuted_copy(x, p["direction"]), (x,), profile)


def _label(p: dict) -> str:
    return f"{p['dtype']:<8} {p['direction']:<7} {p['batch']}x{p['c']}x{p['side']}x{p['side']}"


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "permute_copies", _points, _timed_call, predicted_s, _label))
