"""Padding advice: a GEMM dimension that breaks cuBLAS's alignment, priced again padded to a
multiple of 64 with the same model of time, against the H100 points of tests/fixtures."""

import json

import pytest
import torch
from torch import nn

from roofline.advice.padding import padded_op, padded_size
from roofline.graph.ops import CapturedOp, TensorMeta
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from roofline.schema.profile import GemmRatioCurve
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="module")
def h100():
    recorded = json.loads((FIXTURES / "h100_mechanisms.json").read_text())
    p = load_profile_file(FIXTURES / "h100_profile.json")
    p.gpu.measurements.gemm_ratios = [GemmRatioCurve(**c) for c in recorded["gemm_ratios"]]
    measured = {c["n"]: c["median_s"] for c in recorded["checks"] if c["family"] == "gemm_alignment" and c["m"] == 2048}
    return p, measured


def report_of(out_features: int, prof, device: str = "cuda"):
    model = nn.Linear(768, out_features, bias=False).half()
    x = torch.empty(1, 2048, 768, dtype=torch.float16)
    # a loop whose logits stay on the device (sampled there): copied once, not per call
    options = Options(device=device, batch_sweep=False, capture_device="cpu", calls=1000, copies_per_call=False)
    return Analysis.of(model, (x,), None, prof, options, name="head").report()


def test_vocabulary_padding_is_advised_with_both_times(h100):
    prof, measured = h100
    report = report_of(50257, prof)
    assert [(e.size, e.padded, e.gemms) for e in report.padding] == [(50257, 50304, 1)]
    entry = report.padding[0]
    # both times against the H100's: 2048x768 @ 768x50257 fp16 and the same GEMM at 50304
    assert entry.before_s == pytest.approx(measured[50257], rel=0.4)
    assert entry.after_s == pytest.approx(measured[50304], rel=0.4)
    assert any(line.startswith("pad 50257 → 50304 (top level, 1 GEMM): ") for line in report.advice)


def test_aligned_or_cheap_dimensions_get_no_advice(h100):
    prof, _ = h100
    assert report_of(50304, prof).padding == []
    # 1000 classes in fp16 is 16-byte aligned: padding to 1024 only adds work
    assert report_of(1000, prof).padding == []


def test_no_padding_advice_for_the_cpu(h100):
    prof, _ = h100
    assert report_of(50257, prof, device="cpu").padding == []


def test_padded_operands_keep_their_layout():
    a = TensorMeta.contiguous((2048, 768), torch.float16)
    w_t = TensorMeta(shape=(768, 50257), dtype=torch.float16, stride=(1, 768))  # a Linear weight, transposed
    out = TensorMeta.contiguous((2048, 50257), torch.float16)
    op = CapturedOp(index=0, target=torch.ops.aten.mm.default, args=(a, w_t), kwargs={}, outputs=(out,))
    twin = padded_op(op, 50257, padded_size(50257))
    assert twin.args[1].shape == (768, 50304) and twin.args[1].stride == (1, 768)
    assert twin.outputs[0].shape == (2048, 50304) and twin.outputs[0].stride == (50304, 1)
    assert twin.args[0] == a
