"""Grouped convolutions off the calibrated families' paths, timed and priced by a profile.

    python benchmarks/odd_convs.py --measure OUT.json [--kernels]   # on the GPU: time the shapes
    python benchmarks/odd_convs.py --sweep OUT.json --profile P     # anywhere: price them

Two shapes real models run and the families do not calibrate:

- ``long``: a 1-d grouped convolution with a long filter over a short sequence, as the positional
  convolution of wav2vec2, HuBERT and WavLM (768 channels in 16 groups, filter 128, padding 64),
  at filters 16-128, sequences 49 and 499, batch 1 and 8;
- ``multiplier``: a depthwise convolution with more outputs than inputs per group (PiT's pooling:
  groups = in channels, out = 2 x in), at multipliers 1, 2 and 4;
- ``sequence``: a 1-d grouped convolution of a sequence laid out (batch, length, channels) and
  viewed as (batch, channels, length) without a copy (``layout`` "nlc"), as SqueezeBERT's 1x1
  convolutions (768 channels in 4 groups) and wav2vec2's positional one run, beside the same on a
  contiguous input ("ncl"); ATen copies the former to the latter before cuDNN runs it.

Each is timed by the shared protocol (``roofline.timing``) and priced as ``roofline advise`` prices it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import DTYPES, kernel_s, timed_check_main  # noqa: E402


def _points(args=None) -> list[dict]:
    points = []
    for dtype in ("float32", "float16"):
        for batch, length in ((1, 49), (8, 49), (8, 499)):
            for k in (16, 32, 64, 128):
                points.append(dict(kind="long", dtype=dtype, batch=batch, channels=768, groups=16, length=length, filter=k))
        for channels, side in ((288, 14), (64, 56)):
            for multiplier in (1, 2, 4):
                points.append(dict(kind="multiplier", dtype=dtype, batch=32, channels=channels, side=side, multiplier=multiplier))
        for batch, length, groups, k in ((1, 128, 4, 1), (8, 128, 4, 1), (8, 512, 4, 1), (8, 128, 4, 3), (8, 128, 1, 1), (8, 49, 16, 128)):
            for layout in ("ncl", "nlc"):
                points.append(dict(kind="sequence", dtype=dtype, batch=batch, channels=768, groups=groups, length=length, filter=k, layout=layout))
    return points


def _operands(p: dict, device: str):
    dtype = DTYPES[p["dtype"]]
    if p["kind"] in ("long", "sequence"):
        if p.get("layout") == "nlc":
            x = torch.randn(p["batch"], p["length"], p["channels"], device=device, dtype=dtype).transpose(1, 2)
        else:
            x = torch.randn(p["batch"], p["channels"], p["length"], device=device, dtype=dtype)
        w = torch.randn(p["channels"], p["channels"] // p["groups"], p["filter"], device=device, dtype=dtype)
        return x, w
    x = torch.randn(p["batch"], p["channels"], p["side"], p["side"], device=device, dtype=dtype)
    w = torch.randn(p["channels"] * p["multiplier"], 1, 3, 3, device=device, dtype=dtype)
    return x, w


def _conv(p: dict):
    if p["kind"] in ("long", "sequence"):
        return lambda x, w: F.conv1d(x, w, None, 1, p["filter"] // 2, 1, p["groups"])
    return lambda x, w: F.conv2d(x, w, None, 1, 1, 1, p["channels"])


def _timed_call(p: dict):
    x, w = _operands(p, "cuda")
    conv = _conv(p)
    return lambda: conv(x, w)


def predicted_s(profile, p: dict) -> float:
    with torch.device("meta"):
        x, w = _operands(p, "meta")
    return kernel_s(_conv(p), (x, w), profile)


def _label(p: dict) -> str:
    if p["kind"] == "long":
        return f"long       {p['dtype']:<8} {p['batch']}x{p['channels']}x{p['length']} {p['groups']} groups filter {p['filter']:3d}"
    if p["kind"] == "sequence":
        return f"sequence   {p['dtype']:<8} {p['batch']}x{p['channels']}x{p['length']} {p['groups']} groups filter {p['filter']:3d} {p['layout']}"
    return f"multiplier {p['dtype']:<8} {p['batch']}x{p['channels']}x{p['side']}^2 x{p['multiplier']}"


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "odd_convs", _points, _timed_call, predicted_s, _label,
                              add_args=lambda ap: ap.add_argument("--kernels", action="store_true")))
