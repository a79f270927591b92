"""Resampling (``F.interpolate``) timed on the GPU and priced by a profile.

    python benchmarks/upsample_check.py --measure OUT.json              # on the GPU: time the resamplings
    python benchmarks/upsample_check.py --sweep OUT.json --profile P    # anywhere: price them

ATen's linear, bilinear, bicubic and trilinear channels-first kernels give each output position a
thread that loops over every image and channel, so their time follows the batch x channels a
thread walks, not the bytes (``roofline.model.kernels._upsample_s``); channels-last and
nearest-neighbour kernels give each output element a thread. The shapes are the ones networks
resample: a segmentation head's logits to the image (FCN's 21 classes), SegFormer's decode head
joining four scales at 128 x 128 (channels-last, as its permuted maps are), U-Net and
feature-pyramid 2x steps, an image resized whole, a feature map resized to its own size, a 1-d
signal and a video clip, a pooled one-pixel branch broadcast back, one image and a batch; in float32 and float16, each timed by the shared
protocol (``roofline.timing``) and priced as ``roofline advise`` prices the op.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import kernel_s, timed_check_main  # noqa: E402

# (mode, input shape (N, C, spatial...), output side[, layout])
RESAMPLES = [
    ("bilinear", (1, 21, 28, 28), 224), ("bilinear", (8, 21, 28, 28), 224), ("bilinear", (32, 21, 28, 28), 224),
    ("bilinear", (1, 256, 16, 16), 128), ("bilinear", (1, 256, 64, 64), 128), ("bilinear", (32, 256, 16, 16), 128),
    ("bilinear", (32, 256, 64, 64), 128), ("bilinear", (4, 64, 64, 64), 128), ("bilinear", (16, 128, 32, 32), 64),
    ("bilinear", (32, 512, 7, 7), 14), ("bilinear", (1, 3, 224, 224), 448), ("bilinear", (8, 3, 512, 512), 224),
    ("nearest", (16, 128, 32, 32), 64), ("nearest", (32, 256, 16, 16), 32), ("nearest", (1, 256, 20, 20), 40),
    ("bicubic", (8, 64, 32, 32), 64),
    ("bilinear", (32, 256, 16, 16), 128, "channels_last"), ("bilinear", (32, 8, 64, 64), 128, "channels_last"),
    ("bilinear", (1, 3, 1024, 1024), 2048), ("bilinear", (1, 1, 2048, 2048), 4096), ("bilinear", (32, 256, 64, 64), 64),
    ("linear", (32, 256, 64), 128), ("trilinear", (2, 64, 8, 32, 32), 16),
    # a pooled branch broadcast back (DeepLabV3's image pooling, LR-ASPP): one-pixel planes resampled up
    ("bilinear", (32, 128, 1, 1), 64), ("bilinear", (1, 960, 1, 1), 20), ("bilinear", (4, 512, 1, 1), 33),
]
DTYPES = {"float32": torch.float32, "float16": torch.float16}


def _call(mode: str, side: int, dims: int = 2):
    corners = False if mode in ("linear", "bilinear", "bicubic", "trilinear") else None
    size = (side,) * dims if mode != "trilinear" else (side, 4 * side, 4 * side)  # a clip: frames, then a frame's sides
    return lambda x: F.interpolate(x, size=size, mode=mode, align_corners=corners)


def cases():
    for mode, shape, side, *layout in RESAMPLES:
        for dtype in DTYPES:
            yield dict(mode=mode, shape=list(shape), side=side, dtype=dtype, layout=(layout or ["nchw"])[0])


def _input(p: dict, device: str):
    make = torch.empty if device == "meta" else torch.randn
    x = make(*p["shape"], device=device, dtype=DTYPES[p["dtype"]])
    return x.contiguous(memory_format=torch.channels_last) if p.get("layout") == "channels_last" else x


def predicted_s(profile, p: dict) -> float:
    """The kernel time ``roofline advise`` predicts for one recorded resampling."""
    return kernel_s(_call(p["mode"], p["side"], len(p["shape"]) - 2), (_input(p, "meta"),), profile)


def _label(p: dict) -> str:
    layout = " channels-last" if p.get("layout") == "channels_last" else ""
    return f"{p['mode']:<9} {str(tuple(p['shape'])):<22} -> {p['side']:4d} {p['dtype']}{layout}"


def _timed_call(p: dict):
    fn, x = _call(p["mode"], p["side"], len(p["shape"]) - 2), _input(p, "cuda")
    return lambda: fn(x)


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "resampling", lambda: list(cases()), _timed_call, predicted_s, _label, kernels=True))
