"""Pooling windows timed on the GPU and priced by a profile.

    python benchmarks/pool_check.py --measure OUT.json              # on the GPU: time the pools
    python benchmarks/pool_check.py --sweep OUT.json --profile P    # anywhere: price them

ATen's GPU pools give each output a thread that walks its window, so their time follows outputs
and window taps, not bytes (``roofline.model.kernels.pool_costs``). The pools here are the
ones networks run, at the shapes they run them (calibration times its three pools over one
64-channel image): ResNet's and VGG's at a batch of 32, Inception's and GoogLeNet's stride-1 branch
pools, PoolFormer's token mixer, DenseNet's and ResNet-D's 2x2 averages, a YOLO SPPF 5x5, a 3-d
video pool, and channels-last ones (their kernels are others, priced by bytes); in float32 and
float16, each timed by the shared protocol (``roofline.timing``) and priced as ``roofline advise``
prices the op.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import kernel_s, timed_check_main  # noqa: E402

# (name, kind, input shape, kernel, stride, padding, ceil_mode, count_include_pad[, layout])
POOLS = [
    ("resnet stem max 3x3/2", "max", (32, 64, 112, 112), 3, 2, 1, False, True),
    ("vgg max 2x2/2", "max", (32, 128, 112, 112), 2, 2, 0, False, True),
    ("vgg max 2x2/2 late", "max", (32, 512, 28, 28), 2, 2, 0, False, True),
    ("googlenet branch max 3x3/1", "max", (32, 512, 14, 14), 3, 1, 1, True, True),
    ("googlenet max 3x3/2 ceil", "max", (32, 192, 56, 56), 3, 2, 0, True, True),
    ("sppf max 5x5/1", "max", (16, 256, 20, 20), 5, 1, 2, False, True),
    ("one image max 2x2/2", "max", (1, 64, 224, 224), 2, 2, 0, False, True),
    ("inception avg 3x3/1", "avg", (32, 768, 17, 17), 3, 1, 1, False, True),
    ("poolformer avg 3x3/1 no pad", "avg", (32, 64, 56, 56), 3, 1, 1, False, False),
    ("densenet avg 2x2/2", "avg", (32, 256, 56, 56), 2, 2, 0, False, True),
    ("avg 3x3/2", "avg", (32, 64, 112, 112), 3, 2, 1, False, True),
    ("video max3d 2x2x2", "max3d", (4, 64, 16, 56, 56), 2, 2, 0, False, True),
    ("channels-last max 3x3/2", "max", (32, 64, 112, 112), 3, 2, 1, False, True, "channels_last"),
    ("channels-last max 2x2/2", "max", (32, 128, 112, 112), 2, 2, 0, False, True, "channels_last"),
    ("channels-last avg 3x3/1", "avg", (32, 768, 17, 17), 3, 1, 1, False, True, "channels_last"),
]
DTYPES = {"float32": torch.float32, "float16": torch.float16}


def _call(kind: str, kernel: int, stride: int, padding: int, ceil: bool, include_pad: bool):
    if kind == "max":
        return lambda x: F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil)
    if kind == "max3d":
        return lambda x: F.max_pool3d(x, kernel, stride, padding, ceil_mode=ceil)
    return lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode=ceil, count_include_pad=include_pad)


def cases():
    for name, kind, shape, kernel, stride, padding, ceil, include_pad, *layout in POOLS:
        for dtype in DTYPES:
            yield dict(name=name, kind=kind, shape=list(shape), kernel=kernel, stride=stride, padding=padding, ceil=ceil,
                       include_pad=include_pad, dtype=dtype, layout=(layout or ["nchw"])[0])


def _input(p: dict, device: str):
    x = torch.randn(*p["shape"], device=device, dtype=DTYPES[p["dtype"]]) if device != "meta" else torch.empty(*p["shape"], device=device, dtype=DTYPES[p["dtype"]])
    return x.contiguous(memory_format=torch.channels_last) if p.get("layout") == "channels_last" else x


def predicted_s(profile, p: dict) -> float:
    """The kernel time ``roofline advise`` predicts for one recorded pool."""
    return kernel_s(_call(p["kind"], p["kernel"], p["stride"], p["padding"], p["ceil"], p["include_pad"]), (_input(p, "meta"),), profile)


def _label(p: dict) -> str:
    return f"{p['name']:<30} {str(tuple(p['shape'])):<24} {p['dtype']}"


def _timed_call(p: dict):
    fn, x = _call(p["kind"], p["kernel"], p["stride"], p["padding"], p["ceil"], p["include_pad"]), _input(p, "cuda")
    return lambda: fn(x)


if __name__ == "__main__":
    sys.exit(timed_check_main(__doc__, "pools", lambda: list(cases()), _timed_call, predicted_s, _label))
