"""A ResNet-18-style CNN on 224 x 224 RGB images, batch 16, inference (eval mode).

Architecture (ResNet-18, written out without torchvision): a 7x7/2 stem conv + BatchNorm +
ReLU + 3x3/2 max-pool; four stages of two BasicBlocks (3x3 conv, BN, ReLU, 3x3 conv, BN, add
the shortcut, ReLU) at 64, 128, 256, 512 channels, the first block of stages 2-4 strided (2)
with a 1x1/2 conv + BN downsample shortcut; adaptive average pool to 1x1 and a 1000-way fc.
11.7 M parameters, about 1.8 GMAC (3.6 GFLOP) per image. Default batch 16 (58 GFLOP), float32.

What the advisor should find (regime), H100-class GPU:

* the convolutions are compute-bound kernels at batch 16 (the early, wide-spatial ones move the
  most activations; the late 7x7 ones have few pixels and run well below peak);
* BatchNorm (eval: an affine per channel), ReLU and the residual adds are memory-bound
  pointwise kernels, and they are most of the kernels. Each residual add fuses with its ReLU;
  BN + ReLU is the other group a compiler makes (and BN can be folded into the conv weights),
  which the advisor does not find today: it ends a fusion group at eval-mode batch norm as at a
  reduction (``tests/test_example_findings.py`` marks it);
* host overhead matters: at batch 1 (``sweep()``'s first entry) it is nearly all of the time, at
  batch 16 some 40% (the H100 measured it the dominant regime,
  ``benchmarks/results/h100_accuracy.txt``); larger batches move the network toward
  compute-bound.

``DTYPE`` follows ``ROOFLINE_EXAMPLE_DTYPE`` (float32 | bfloat16 | float16), default float32.
"""

import os

import torch
from torch import nn

_DTYPES = {
    "float32": torch.float32, "fp32": torch.float32,
    "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
    "float16": torch.float16, "fp16": torch.float16, "half": torch.float16,
}


def _dtype_from_env(default: torch.dtype) -> torch.dtype:
    name = os.environ.get("ROOFLINE_EXAMPLE_DTYPE", "").strip().lower()
    if not name:
        return default
    if name not in _DTYPES:
        raise ValueError(
            f"ROOFLINE_EXAMPLE_DTYPE={name!r}: expected one of float32, bfloat16, float16"
        )
    return _DTYPES[name]


DTYPE = _dtype_from_env(torch.float32)
BATCH = 16
IMAGE = 224
NUM_CLASSES = 1000
SWEEP_BATCH = (1, 4, 16, 64, 256)


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.downsample = None
        if stride != 1 or c_in != c_out:
            self.downsample = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                nn.BatchNorm2d(c_out),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = NUM_CLASSES):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = nn.Sequential(BasicBlock(64, 64), BasicBlock(64, 64))
        self.layer2 = nn.Sequential(BasicBlock(64, 128, 2), BasicBlock(128, 128))
        self.layer3 = nn.Sequential(BasicBlock(128, 256, 2), BasicBlock(256, 256))
        self.layer4 = nn.Sequential(BasicBlock(256, 512, 2), BasicBlock(512, 512))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def make_model() -> nn.Module:
    return ResNet18().to(DTYPE).eval()


def make_inputs(batch: int = BATCH, image: int = IMAGE) -> tuple:
    return (torch.randn(batch, 3, image, image, dtype=DTYPE),)


def get_model() -> nn.Module:
    return make_model()


def get_example_inputs() -> tuple:
    return make_inputs()


def sweep():
    """Yield ``(label, model, example_inputs)`` over batch at 224 x 224 (built lazily)."""
    for batch in SWEEP_BATCH:
        yield f"batch={batch}", make_model(), make_inputs(batch)
