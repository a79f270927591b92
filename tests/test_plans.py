"""The ranked plan: one recommendation over device x execution, each plan checked for whether it
applies (host syncs, missing kernels, memory), uncertain ops flagged with their share of the time,
and the other advice lines consistent with the plan."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from roofline.advice.applicability import host_syncs, memory_fit, missing_kernels, peak_activation_bytes
from roofline.advice.plans import GAIN_WORTH_IT, DevicePart, rank_plans
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.graph.loading import load_model_file
from roofline.pipeline import Analysis, Options, analyze
from roofline.schema.report import Alternatives

REPO = Path(__file__).resolve().parent.parent


def _part(device="cuda", eager=100e-6, compiled=None, graphs=None, missing=(), memory=None) -> DevicePart:
    alts = Alternatives(eager_s=eager, fused_s=eager, cuda_graphs_s=graphs, torch_compile_s=compiled)
    return DevicePart(device=device, alternatives=alts, copies_s=0.0, overhead_share=0.5, missing_kernels=list(missing), memory=memory)


def test_a_plan_must_beat_a_simpler_one_by_the_threshold():
    just_under = 1 - GAIN_WORTH_IT / 2
    plans = rank_plans([_part(eager=100e-6, compiled=100e-6 * just_under)], syncs=[])
    rec = [p for p in plans if p.recommended]
    assert len(rec) == 1 and rec[0].execution == "eager"  # 5% is not worth a change
    plans = rank_plans([_part(eager=100e-6, compiled=100e-6 * (1 - 2 * GAIN_WORTH_IT))], syncs=[])
    assert next(p for p in plans if p.recommended).execution == "torch_compile"
    assert plans[0].recommended  # the recommendation leads


def test_host_syncs_block_cuda_graphs_and_flag_compile():
    plans = rank_plans([_part(eager=100e-6, compiled=50e-6, graphs=20e-6)], syncs=[".item() at m.py:3"])
    by = {p.execution: p for p in plans}
    assert not by["cuda_graphs"].applicable and "m.py:3" in by["cuda_graphs"].reason
    assert by["torch_compile"].applicable and "graph breaks" in by["torch_compile"].reason
    assert by["eager"].recommended  # compile's price assumes one graph: not stood behind


def test_missing_kernels_and_memory_block_a_device():
    gpu = _part("cuda", eager=1e-6, graphs=1e-7, missing=["aten.mm on int64"])
    cpu = _part("cpu", eager=1e-3)
    plans = rank_plans([gpu, cpu], syncs=[])
    assert all(not p.applicable for p in plans if p.device == "cuda")
    assert next(p for p in plans if p.recommended).device == "cpu"


def _file(tmp_path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def _analysis(path: str, profile="nvidia-h100-80gb-hbm3") -> Analysis:
    loaded = load_model_file(path)
    return Analysis.of(loaded.model, loaded.args, loaded.kwargs, profile, Options(device="cuda", user_files=(path,)),
                       materialize=loaded.materializer())


def test_item_and_tolist_are_host_syncs(tmp_path):
    path = _file(tmp_path, "syncs.py", """
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                n = x.sum(0).tolist()
                if x.sum().item() > 0:
                    x = x * 2
                return x[x > 0].sum()
        model = M()
        example_inputs = (torch.randn(4, 4),)
    """)
    a = _analysis(path)
    syncs = host_syncs(a.graph)
    assert any(s.startswith(".tolist() at syncs.py:5") for s in syncs), syncs
    assert any(s.startswith(".item() at syncs.py:6") for s in syncs), syncs
    assert any("boolean-mask" in s and "syncs.py:8" in s for s in syncs), syncs
    report = a.report()
    graphs = next(p for p in report.plans if p.execution == "cuda_graphs")
    assert not graphs.applicable and "syncs.py:5" in graphs.reason


def test_int64_matmul_has_no_gpu_kernel(tmp_path):
    path = _file(tmp_path, "imm.py", """
        import torch
        class M(torch.nn.Module):
            def forward(self, a, b):
                return a @ b
        model = M()
        example_inputs = (torch.randint(0, 9, (64, 64)), torch.randint(0, 9, (64, 64)))
    """)
    a = _analysis(path)
    assert missing_kernels(a.graph, "cuda") == ["aten.mm on int64"]
    assert missing_kernels(a.graph, "cpu") == []
    report = a.report()
    assert report.recommended_plan.device == "cpu"
    assert all(not p.applicable and "NotImplementedError" in p.reason for p in report.plans if p.device == "cuda")
    assert "aten.mm.default" in report.uncertain.by_op  # no int64 curve either


def test_weights_beyond_the_gpu_memory_do_not_fit():
    layers, d = 12, 32768  # 12 x 32768^2 bf16 = 25.8 GB ... x4 below
    with torch.device("meta"):
        model = torch.nn.Sequential(*[torch.nn.Linear(d, d, bias=False) for _ in range(layers * 4)]).to(torch.bfloat16)
        x = torch.empty(1, d, dtype=torch.bfloat16)
    a = Analysis.of(model, (x,), None, "nvidia-h100-80gb-hbm3", Options(device="cuda", batch_sweep=False))
    fit = a.memory_on("cuda")
    assert fit.weights_bytes == layers * 4 * d * d * 2
    assert not fit.fits and fit.capacity_bytes == a.profile.gpu.identity.memory_bytes
    report = a.report()
    assert all(not p.applicable and "does not fit" in p.reason for p in report.plans if p.device == "cuda")
    assert any(line.startswith("memory:") and "does not fit" in line for line in report.advice)


def test_peak_activations_free_after_last_use():
    # x -> a = x*2 -> b = a+1 -> c = b.sum(): a dies after b is made, b after c
    x = torch.randn(1000)
    graph = capture(lambda t: ((t * 2) + 1).sum(), (x,))
    costs = [cost_of(op)[0] for op in graph.ops]
    assert peak_activation_bytes(graph, costs) == 2 * 4000  # a and b alive together, never three
    fit = memory_fit(graph, costs, "cpu", 12_000)
    assert fit.need_bytes == 4000 + 8000 and fit.fits
    assert not memory_fit(graph, costs, "cpu", 11_999).fits


def test_uncertain_ops_are_listed_with_their_share():
    def f(a, b):
        return torch.fft.fft(a @ b).abs()

    a = torch.randn(256, 256, dtype=torch.complex64)
    report = analyze(f, (a, a), profile="nvidia-h100-80gb-hbm3", device="cuda", batch_sweep=False)
    u = report.uncertain
    assert u.by_op == {"aten.mm.default": 1, "aten._fft_c2c.default": 1}
    assert "complex" in u.reasons["aten.mm.default"] and "FFT" in u.reasons["aten._fft_c2c.default"]
    flagged = sum(op.predicted_s for op in report.ops if op.uncertain)
    assert u.predicted_s == pytest.approx(flagged) and 0 < u.share < 1
    assert any(line.startswith("uncertain: 2 ops") for line in report.advice)


def test_a_covered_model_has_no_uncertain_ops():
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU(), torch.nn.LayerNorm(64)).eval()
    report = analyze(model, (torch.randn(8, 64),), profile="nvidia-h100-80gb-hbm3", device="cuda", batch_sweep=False)
    assert report.uncertain.ops == 0 and not any(line.startswith("uncertain") for line in report.advice)


def test_mlp_tiny_recommends_one_plan_and_nothing_contradicts_it():
    path = str(REPO / "examples" / "mlp_tiny.py")
    report = _analysis(path).report()
    rec = [p for p in report.plans if p.recommended]
    assert len(rec) == 1
    rec = rec[0]
    priced = [p for p in report.plans if p.applicable and p.predicted_s is not None]
    assert rec.predicted_s <= min(p.predicted_s for p in priced) * (1 + GAIN_WORTH_IT)
    assert report.advice[0].startswith("plan: ")
    # the old per-topic recommendations that could each name another winner are gone
    assert not any(line.startswith(("placement:", "recommended:", "no change recommended")) for line in report.advice)
    for line in report.advice:
        if line.startswith("copies:"):
            assert rec.device == "cuda"
        if line.startswith("fusion"):
            assert rec.execution.startswith("torch_compile")
        if line.startswith("batch size"):
            assert ("GPU" if rec.device == "cuda" else "CPU") in line.split(":")[0]
