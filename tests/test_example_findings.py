"""What each example's docstring (and ``examples/README.md``) says the advisor finds, checked by running it.

Every example is loaded as ``roofline advise`` loads it (``load_model_file``: built on the meta device) and analyzed
on the shipped H100 profile for its GPU (``device="cuda"``), captured on the CPU. The findings are asserted as the
report gives them, with margins a correct model keeps: a regime and its share, which term bounds a kernel (its
compute term against its memory term), fusion groups and their sizes, the recommended plan, where a ``sweep()``
crosses from the CPU to the GPU, what fits in memory. Times are asserted only as ratios or wide bands around a
measured figure (``benchmarks/RESULTS.md``, ``benchmarks/results/h100_*.txt``), never as a prediction's exact value.

One analysis per example and option set is shared by the module (``advise``). A finding that is right but that the
advisor gets wrong today is an ``xfail(strict=True)`` whose reason names the fault: it turns red once fixed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest
import torch

from roofline.advice.placement import transfer_time_s
from roofline.graph.capture import normalize_inputs
from roofline.graph.loading import LoadedModel, load_model_file
from roofline.model.kernels import matmul_dtype_name
from roofline.pipeline import Analysis, Options, placement_sweep
from roofline.profiles import find_profile
from roofline.schema.report import OpReport, Report

PROFILE = "nvidia-h100-80gb-hbm3"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
DTYPE_ENV = "ROOFLINE_EXAMPLE_DTYPE"  # the defaults are under test: unset while a file is loaded

# The view between a GEMM and the op that reads its output (every nn.Linear on a 3-D input) stops
# advice.fusion.fusion_groups from folding that op into the GEMM's epilogue, although views ride along inside a chain.
EPILOGUE_THROUGH_VIEW = "advisor: a view right after a GEMM (nn.Linear on 3-D input) breaks matmul-epilogue fusion (advice/fusion.py)"
# Eval-mode batch norm is a per-channel affine (no statistics), yet it is priced as a norm, which ends a fusion
# group: the ReLU after it can never join it.
EVAL_BATCH_NORM_ENDS_GROUP = "advisor: eval-mode batch norm ends a fusion group like a reduction, so BN + ReLU never fuse (advice/fusion.py)"


# ---- loading and analyzing -------------------------------------------------------------------------------------


def load(name: str, env: dict[str, str] | None = None) -> LoadedModel:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(DTYPE_ENV, raising=False)
        for key, value in (env or {}).items():
            mp.setenv(key, value)
        return load_model_file(EXAMPLES_DIR / name)


@dataclass
class Advised:
    """One example analyzed on the H100 profile: its loaded file, the analysis and (built once) the report."""

    loaded: LoadedModel
    analysis: Analysis

    @cached_property
    def report(self) -> Report:
        return self.analysis.report()


@pytest.fixture(scope="module")
def h100():
    return find_profile(PROFILE)


@pytest.fixture(scope="module")
def advise(h100):
    """``advise(name, env=..., **options)``: the example analyzed once per module for these options."""
    cache: dict = {}

    def get(name: str, env: dict[str, str] | None = None, **options) -> Advised:
        key = (name, tuple(sorted((env or {}).items())), tuple(sorted(options.items())))
        if key not in cache:
            loaded = load(name, env)
            opts = Options(device="cuda", capture_device="cpu", **{"batch_sweep": False, **options})
            cache[key] = Advised(loaded, Analysis.of(loaded.model, loaded.args, loaded.kwargs, h100, opts, name=loaded.name))
        return cache[key]

    return get


@pytest.fixture(scope="module")
def sweep(h100):
    """``sweep(name)``: the example's ``sweep()`` entries built on meta, each analyzed once: {label: Analysis}."""
    cache: dict = {}

    def get(name: str, labels: tuple[str, ...] | None = None) -> dict[str, Analysis]:
        if name not in cache:
            cache[name] = {}
        done = cache[name]
        with torch.device("meta"):
            for label, model, inputs in sweep_entries(name):
                if (labels is None or label in labels) and label not in done:
                    args, kwargs = normalize_inputs(inputs)
                    done[label] = Analysis.of(model, args, kwargs, h100, Options(device="cuda", capture_device="cpu", batch_sweep=False))
        return {k: v for k, v in done.items() if labels is None or k in labels}

    return get


def sweep_entries(name: str) -> list:
    loaded = load(name)
    with torch.device("meta"):
        return list(loaded.module.sweep())


# ---- reading a report ------------------------------------------------------------------------------------------


def share(regime_s: dict[str, float], regime: str) -> float:
    """The share of the predicted time in ``regime``."""
    total = sum(regime_s.values())
    return regime_s.get(regime, 0.0) / total if total else 0.0


def dominant(regime_s: dict[str, float]) -> str:
    return max(("compute", "memory", "overhead"), key=lambda r: regime_s.get(r, 0.0))


def kernel_bound(op) -> str:
    """Which roofline term bounds the op's own kernel, whether or not the host hides it on the timeline."""
    return "compute" if op.compute_s >= op.memory_s else "memory"


def ops(report: Report, *, category: str | None = None, target: str | None = None, module: str | None = None) -> list[OpReport]:
    """The report's ops with a kernel, by category, aten op name (``aten.gelu``) or module suffix."""
    return [
        op for op in report.ops
        if op.kernels
        and (category is None or op.category == category)
        and (target is None or op.target.startswith(target + "."))
        and (module is None or (op.module or "").endswith(module))
    ]


def group_targets(report: Report) -> list[list[str]]:
    """Each fusion group as the aten ops it holds (views left out)."""
    by_index = {op.index: op for op in report.ops}
    return [[by_index[i].target.split(".")[1] for i in g.ops if by_index[i].category != "view"] for g in report.fusion]


def plan_of(report: Report) -> tuple[str, str]:
    rec = report.recommended_plan
    assert rec is not None, f"no recommended plan: {[(p.device, p.execution, p.reason) for p in report.plans]}"
    return rec.device, rec.execution


def graph_speedup(a: Analysis) -> float:
    """Eager time over the time replayed as one CUDA graph."""
    return a.alternatives.eager_s / a.alternatives.cuda_graphs_s


# ---- seed experiments -------------------------------------------------------------------------------------------


def test_seed000_matmul_compute_bound_and_copies_dominate_the_gpu(advise):
    a = advise("seed000_matmul.py")
    r = a.report
    (mm,) = ops(r, category="matmul")
    assert kernel_bound(mm) == "compute" and share(r.total.regime_s, "compute") > 0.9
    cpu_op = a.analysis.timeline("cpu").ops[0]
    assert cpu_op.compute_s > cpu_op.memory_s, "the host CPU's 137 GFLOP is compute-bound too"
    p = r.placement
    assert p.transfer_s > 5 * p.gpu_s, "the copies in and out dominate the GPU alternative"
    assert p.recommended == "cuda" and p.gpu_s + p.transfer_s < p.cpu_s, "yet the GPU beats the CPU"
    assert plan_of(r)[0] == "cuda"


def test_seed000_matmul_sweep_crossover(h100, sweep):
    """The H100 measured the crossover at dim 1024 (benchmarks/results/h100_advice.txt)."""
    ps = placement_sweep(sweep_entries("seed000_matmul.py"), h100, Options(device="cuda"))
    assert ps.parameter == "dim" and 512 <= ps.crossover <= 2048
    small = sweep("seed000_matmul.py", ("dim=16", "dim=256"))
    for label, a in small.items():
        assert a.placement.recommended == "cpu", label
        assert dominant(a.timeline().regime_s()) == "overhead", f"{label}: the kernel is shorter than one dispatch"


def test_seed000_nested_sin_memory_bound_fusible_4_to_1_cpu_wins(advise):
    r = advise("seed000_nested_sin.py").report
    sins = ops(r, target="aten.sin")
    assert len(sins) == 4 and all(op.regime == "memory" and kernel_bound(op) == "memory" for op in sins)
    (group,) = r.fusion
    assert len(group.ops) == 4 and group.kernels_saved == 3, "fusible 4 -> 1"
    assert group.bytes_saved >= 0.7 * r.total.bytes, "one read and one write instead of four of each"
    assert r.alternatives.fused_s * 2.5 < r.alternatives.eager_s
    p = r.placement
    assert p.gpu_s < p.cpu_s and p.recommended == "cpu", "the GPU computes faster, the copies make it lose"
    assert plan_of(r)[0] == "cpu"


def test_seed000_nested_sin_sweep(h100, sweep):
    ps = placement_sweep(sweep_entries("seed000_nested_sin.py"), h100, Options(device="cuda"))
    assert ps.crossover is None, "the CPU wins at every size once the copies count"
    (a,) = sweep("seed000_nested_sin.py", ("numel=2**10",)).values()
    assert dominant(a.timeline().regime_s()) == "overhead"


def test_seed002_step_overhead_bound_cpu_faster_per_step(advise):
    r = advise("seed002_rnn_step.py").report
    assert all(op.regime == "overhead" for op in ops(r)), [(op.target, op.regime) for op in ops(r)]
    assert share(r.total.regime_s, "overhead") > 0.8
    assert r.placement.recommended == "cpu" and plan_of(r) == ("cpu", "eager")
    pointwise = {op.index for op in ops(r) if op.category != "matmul"}
    assert len(pointwise) == 5 and any(pointwise <= set(g.ops) for g in r.fusion), "the five pointwise ops fuse into one kernel"


def test_seed002_loop_a_cuda_graph_rescues_the_gpu(advise):
    """Over the seed's loop the state stays on the device: one copy in and out, STEPS steps."""
    a = advise("seed002_rnn_step.py", calls=10_000, copies_per_call=False)
    assert a.loaded.module.STEPS == 10_000
    assert plan_of(a.report) == ("cuda", "cuda_graphs")
    assert a.report.placement.recommended == "cpu", "eager, the GPU still loses the loop"


def test_seed002_sweep_matmul_takes_over(h100, sweep):
    ps = placement_sweep(sweep_entries("seed002_rnn_step.py"), h100, Options(device="cuda"))
    assert ps.parameter == "hidden" and ps.crossover in (2048, 4096), (ps.parameter, ps.crossover)
    (a,) = sweep("seed002_rnn_step.py", ("hidden=4096",)).values()
    r = a.report()
    (mm,) = ops(r, category="matmul")
    assert kernel_bound(mm) == "memory", "a GEMV reading its 64 MiB weight"
    # its kernel takes about as long as the host's dispatch of it (the step's first op, it waits for
    # the host either way): the GPU wins on the matmul, not by hiding the dispatches
    assert 0.5 < mm.kernel_s / mm.host_s < 2.0
    assert mm.kernel_s > 10 * max(op.kernel_s for op in r.ops if op.category != "matmul")


def test_seed003_overhead_bound_below_hidden_1024(advise):
    r = advise("seed003_linear_relu.py", batch_sweep=True).report
    assert share(r.total.regime_s, "overhead") > 0.9
    alts = r.alternatives
    assert alts.eager_s / alts.cuda_graphs_s > 3, "removing the overhead is worth several x on an H100 (measured 5.5x)"
    assert alts.eager_s / alts.fused_s > 1.1, "bias + ReLU fused: the seed's further ~1.2x"
    assert plan_of(r) == ("cuda", "cuda_graphs")
    assert r.batch_sweep.doubling_ratio < 1.1, "while overhead-bound, doubling the batch barely changes the time"


def test_seed003_sweep_overhead_then_compute(sweep):
    corners = ("hidden=128,batch=1", "hidden=128,batch=512", "hidden=512,batch=64", "hidden=2048,batch=64", "hidden=4096,batch=512")
    s = sweep("seed003_linear_relu.py", corners)
    for label in corners[:3]:
        assert dominant(s[label].timeline().regime_s()) == "overhead", label
    for label in corners[3:]:
        a = s[label]
        assert dominant(a.timeline().regime_s()) == "compute", label
        assert all(kernel_bound(op) == "compute" for op in ops(a.report(), category="matmul")), label
    assert graph_speedup(s["hidden=2048,batch=64"]) < 1.1 and graph_speedup(s["hidden=4096,batch=512"]) < 1.05, (
        "once compute-bound, removing the overhead hardly matters"
    )


def test_seed004_kernel_compute_bound_copy_bound_pipeline(advise):
    r = advise("seed004_stream_batches.py").report
    (mm,) = ops(r, category="matmul")
    s = r.streams
    assert kernel_bound(mm) == "compute"
    assert mm.kernel_s < min(s.h2d_pinned_s, s.d2h_pinned_s), "the kernel is shorter than either copy"
    assert min(s.h2d_pageable_s, s.d2h_pageable_s) > 3 * max(s.h2d_pinned_s, s.d2h_pinned_s)
    assert 2.0 < s.streams_gain < 3.0, "streams overlap the three stages: ~2.5x (measured 1.63 ms against 4.26 ms)"


def test_seed004_sweep_turns_compute_bound(sweep):
    """Copies grow as n**2 and the kernel as n**3: the kernel outgrows each pinned copy near n = 2 P / W (about
    1900 for fp32 on an H100), and stays longer."""
    s = sweep("seed004_stream_batches.py")
    sizes = sorted(int(label.split("=")[1]) for label in s)
    longer = [n for n in sizes if ops(s[f"n={n}"].report(), category="matmul")[0].kernel_s > max(s[f"n={n}"].streams.h2d_pinned_s, s[f"n={n}"].streams.d2h_pinned_s)]
    assert longer and longer == [n for n in sizes if n >= longer[0]], longer
    assert longer[0] in (2048, 4096), longer


# ---- transformers ------------------------------------------------------------------------------------------------


def test_gpt_block_regimes_and_plan(advise):
    r = advise("gpt_block.py").report
    gemms = ops(r, category="matmul")
    assert len(gemms) == 4 and all(kernel_bound(op) == "compute" for op in gemms)
    (attn,) = ops(r, category="attention")
    assert kernel_bound(attn) == "compute", "one fused flash kernel"
    small = ops(r, category="norm") + ops(r, target="aten.gelu") + ops(r, target="aten.add")
    assert len(small) == 5 and all(kernel_bound(op) == "memory" for op in small)
    assert share(r.total.regime_s, "overhead") > 0.3, "at batch 8 host overhead is a large part (measured: the dominant regime)"
    assert r.alternatives.cuda_graphs_s < 0.8 * r.alternatives.eager_s


@pytest.mark.xfail(strict=True, reason="with the copies of its 12.6 MB input and output each call the model puts a CUDA graph "
                   "6% under eager, within the 10% a change must win by; the H100 measured it 16-25% under "
                   "(benchmarks/results/h100_plans_nocompile.json, h100_plans_compile.json)")
def test_gpt_block_plan_is_a_cuda_graph(advise):
    device, execution = plan_of(advise("gpt_block.py").report)
    assert device == "cuda" and execution in ("cuda_graphs", "torch_compile_reduce_overhead")


@pytest.mark.xfail(strict=True, reason=EPILOGUE_THROUGH_VIEW)
@pytest.mark.parametrize("name, gemm, epilogue", [("gpt_block.py", "mlp.fc_1", "gelu"), ("gpt2_xl.py", "h.0.mlp.c_fc", "gelu")])
def test_gelu_folds_into_its_gemm(advise, name, gemm, epilogue):
    r = advise(name).report
    (fc,) = ops(r, category="matmul", module=gemm)
    assert any(g.kind == "matmul epilogue" and g.ops[0] == fc.index and epilogue in targets for g, targets in zip(r.fusion, group_targets(r)))


def test_gpt_block_sweep_overhead_to_compute(sweep):
    s = sweep("gpt_block.py", ("batch=1,seq=512", "batch=64,seq=512"))
    # the device idles most of the run at batch 1 (the H100 measured 80%, fp16: h100_accuracy_2026-11-26.json)
    assert share(s["batch=1,seq=512"].timeline().regime_s(), "overhead") > 0.7
    assert dominant(s["batch=64,seq=512"].timeline().regime_s()) == "compute"


def test_gpt2_xl_prefill(advise, h100):
    a = advise("gpt2_xl.py")
    r = a.report
    assert all(kernel_bound(op) == "compute" for op in ops(r, category="matmul") + ops(r, category="attention"))
    small = ops(r, category="norm") + ops(r, target="aten.gelu") + ops(r, target="aten.add")
    assert len(small) >= 48 * 5 and all(kernel_bound(op) == "memory" for op in small)
    assert 1400 < r.total.ops < 1600
    assert share(r.total.regime_s, "overhead") > 0.3, "some 31 aten ops a block: host overhead is not small beside the kernels"
    assert graph_speedup(a.analysis) > 1.3, "1,500 launches a call: one graph launch instead"
    assert max(r.ops, key=lambda op: op.predicted_s).module == "lm_head"
    assert [(p.size, p.padded) for p in r.padding] == [(50257, 50304)]
    (gpu_memory,) = [m for m in r.memory if m.device == "cuda"]
    assert 3.0e9 < gpu_memory.weights_bytes < 3.2e9 and gpu_memory.fits
    assert r.placement.recommended == "cuda" and plan_of(r)[0] == "cuda"
    weights_in = transfer_time_s(a.analysis.device("cuda"), gpu_memory.weights_bytes, "h2d", "pinned")
    assert weights_in > r.total.predicted_s, "moving the weights each call costs more than the forward"


def test_llama_1b_prefill(advise):
    a = advise("llama.py")
    r = a.report
    assert all(kernel_bound(op) == "compute" for op in ops(r, category="matmul"))
    assert max(r.ops, key=lambda op: op.predicted_s).module == "head", "the vocabulary head is the largest op"
    assert 1100 < r.total.ops < 1250
    assert share(r.total.regime_s, "overhead") > 0.5 and graph_speedup(a.analysis) > 2
    q, k, v = ops(r, category="attention")[0].inputs[:3]
    assert q.shape[1] == 32 and k.shape[1] == v.shape[1] == 8, "grouped-query attention: K and V once per key/value head"
    assert all(m.fits for m in r.memory) and plan_of(r)[0] == "cuda"


def test_llama_70b_does_not_fit_one_gpu(advise):
    r = advise("llama.py", env={"ROOFLINE_LLAMA_SIZE": "70b"}).report
    (gpu_memory,) = [m for m in r.memory if m.device == "cuda"]
    assert not gpu_memory.fits and gpu_memory.weights_bytes > 130e9
    gpu_plans = [p for p in r.plans if p.device == "cuda"]
    assert gpu_plans and not any(p.applicable for p in gpu_plans)
    assert all("does not fit" in p.reason for p in gpu_plans)
    assert r.recommended_plan is None, "nor does the 135 GB host of the shipped profile hold 141 GB"
    assert share(r.total.regime_s, "compute") > 0.7, "at 70B the prefill is compute-bound"


def test_transformer_encoder_fast_path(advise):
    r = advise("transformer_encoder.py").report
    assert [op.target for op in r.ops] == ["aten._transformer_encoder_layer_fwd.default"] * 4
    # ATen's SDPA path: the projections with their biases, SDPA, the output projection; two residual adds,
    # two layer norms, the FFN's two GEMMs and its activation
    assert all(op.kernels == 10 for op in r.ops)
    assert dominant(r.total.regime_s) == "compute"


def test_vocab_head_padding_and_placement(advise):
    r = advise("vocab_head.py").report
    assert share(r.total.regime_s, "compute") > 0.9
    (pad,) = r.padding
    assert (pad.size, pad.padded) == (50257, 50304)
    assert pad.after_s * 3 < pad.before_s, "severalfold (the H100 measured 1.88 ms against 0.231 ms)"
    assert plan_of(r)[0] == "cpu", "per call, the 201 MB of logits copied back make the CPU the better place"
    loop = advise("vocab_head.py", calls=100, copies_per_call=False).report
    assert plan_of(loop)[0] == "cuda", "--calls 100 --copies once: the logits stay on the device"


def test_attention_one_fused_kernel(advise):
    r = advise("attention.py").report
    (attn,) = ops(r, category="attention")
    # time by regime counts the device's wait for the host before the kernel as overhead: the H100
    # measured 89% compute (benchmarks/results/h100_accuracy_2026-11-26.json, measured_shares)
    assert kernel_bound(attn) == "compute" and 0.75 < share(r.total.regime_s, "compute") < 0.95
    assert 0.15e-3 < r.total.predicted_s < 0.45e-3, "the H100 measured 0.225 ms"


def test_attention_unfused_math_path_is_memory_bound_and_slower(advise, h100):
    """The same attention written out (QK^T, mask, softmax, PV) writes the 1 GiB score matrix."""

    def math_attention(q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        n = q.shape[-2]
        causal = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
        return torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v

    fused = advise("attention.py")
    unfused = Analysis.of(math_attention, fused.loaded.args, None, h100, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    assert dominant(unfused.timeline().regime_s()) == "memory"
    assert unfused.total_s > 3 * fused.analysis.total_s


def test_attention_sweep(sweep):
    s = sweep("attention.py", ("seq=128", "seq=8192"))
    assert dominant(s["seq=128"].timeline().regime_s()) == "overhead"
    assert dominant(s["seq=8192"].timeline().regime_s()) == "compute"


# ---- other architectures ------------------------------------------------------------------------------------------


def test_resnet_cnn(advise):
    r = advise("resnet_cnn.py").report
    convs = ops(r, category="conv")
    assert len(convs) == 20 and all(kernel_bound(op) == "compute" for op in convs)
    others = [op for op in ops(r) if op.category in ("norm", "pointwise", "reduction")]
    assert all(kernel_bound(op) == "memory" for op in others)
    assert sum(op.kernels for op in others) > sum(op.kernels for op in convs), "they are most of the kernels"
    add_relu = [g for g in group_targets(r) if g[:2] == ["add", "relu_"]]
    assert len(add_relu) == 8, "each residual add fuses with its ReLU"


@pytest.mark.xfail(strict=True, reason="the H100 measured 33% of resnet_cnn's run at batch 16 waiting on the host "
                   "(h100_accuracy_2026-11-26.json, measured_shares); the model, at the typical session's host speed, 3%: its "
                   "convolutions over their measured kernels (per op 23%), its host under")
def test_resnet_cnn_host_overhead_matters_at_batch_16(advise):
    assert share(advise("resnet_cnn.py").report.total.regime_s, "overhead") > 0.2


@pytest.mark.xfail(strict=True, reason=EVAL_BATCH_NORM_ENDS_GROUP)
def test_resnet_cnn_batch_norm_and_relu_fuse(advise):
    groups = group_targets(advise("resnet_cnn.py").report)
    assert any("_native_batch_norm_legit_no_training" in g and "relu_" in g for g in groups)


def test_resnet_cnn_sweep(sweep):
    s = sweep("resnet_cnn.py", ("batch=1", "batch=256"))
    assert dominant(s["batch=1"].timeline().regime_s()) == "overhead"
    assert dominant(s["batch=256"].timeline().regime_s()) == "compute"


def test_lstm_priced_from_its_shapes_far_below_peak(advise):
    a = advise("lstm.py")
    r = a.report
    rnn = [op for op in r.ops if "rnn" in op.target]
    assert len(rnn) == 2 and all(op.flops > 0 and op.kernel_s > 0 for op in rnn)
    assert abs(r.total.flops / 23.5e9 - 1) < 0.05
    peak = a.analysis.dev.matmul_model(matmul_dtype_name(torch.float32, False)).peak_flop_per_s
    assert r.total.achieved_flop_per_s < 0.15 * peak, "200 dependent GEMMs of 32 rows"
    assert plan_of(r)[0] == "cuda"


def test_rnn_loop_overhead_bound(advise, sweep):
    r = advise("rnn_loop.py").report
    assert share(r.total.regime_s, "overhead") > 0.85, "the H100 measured 91% (h100_accuracy_2026-11-26.json)"
    assert r.placement.recommended == "cpu", "eager, the CPU is faster"
    device, execution = plan_of(r)
    assert device == "cuda" and execution in ("cuda_graphs", "torch_compile_reduce_overhead")
    steps = [g for g, targets in zip(r.fusion, group_targets(r)) if "tanh" in targets and "add" in targets]
    assert len(steps) == 50 and all(g.kind == "matmul epilogue" for g in steps), "each step's add + tanh fuses into its addmm"
    s = sweep("rnn_loop.py", ("batch=1,steps=50", "batch=2,steps=50"))
    assert s["batch=2,steps=50"].total_s < 1.1 * s["batch=1,steps=50"].total_s, "a larger batch is nearly free"


def test_mlp_tiny_overhead_bound_cuda_graph(advise):
    r = advise("mlp_tiny.py", batch_sweep=True).report
    assert r.total.kernels == 16 and share(r.total.regime_s, "overhead") > 0.9
    alts = r.alternatives
    assert alts.eager_s / alts.cuda_graphs_s > 3, "the H100 measured 216 us eager against 35.5 us as a graph"
    assert plan_of(r) == ("cuda", "cuda_graphs")
    assert r.placement.recommended == "cpu", "eager, the CPU is faster"
    assert [g for g in group_targets(r)] == [["addmm", "relu"]] * 8
    assert alts.cuda_graphs_s < alts.fused_s, "a graph removes more overhead than fusion"
    assert r.batch_sweep.doubling_ratio < 1.1


def test_pointwise_chain_one_fusion_group(advise):
    r = advise("pointwise_chain.py").report
    # each small kernel waits on its launch: the H100 measured 72% memory, 28% overhead (h100_accuracy_2026-11-26.json)
    assert dominant(r.total.regime_s) == "memory" and share(r.total.regime_s, "overhead") > 0.1
    (group,) = r.fusion
    assert len(group.ops) == 16 and group.kernels_saved == 15
    assert group.bytes_saved > 0.85 * r.total.bytes, "16 MiB read once and written once"


def test_pointwise_chain_sweep(h100, sweep):
    ps = placement_sweep(sweep_entries("pointwise_chain.py"), h100, Options(device="cuda"))
    assert ps.crossover in (2**22, 2**24), "with the copies per call the GPU wins from about 2**22 elements"
    s = sweep("pointwise_chain.py", ("numel=2**14", "numel=2**26"))
    assert share(s["numel=2**14"].timeline().regime_s(), "overhead") > 0.75
    assert share(s["numel=2**26"].timeline().regime_s(), "memory") > 0.9


def test_norms_softmax_memory_bound_rmsnorm_fusible(advise):
    r = advise("norms_softmax.py").report
    assert share(r.total.regime_s, "memory") > 0.8, "the H100 measured 91% in float32 (h100_accuracy_2026-11-26.json)"
    assert all(kernel_bound(op) == "memory" for op in ops(r))
    for op in ops(r, category="reduction") + ops(r, category="norm"):
        assert op.bytes_read > 0 and op.kernel_s > 0, f"{op.target} must be costed"
    rms = {op.index for op in ops(r, module="rms")}
    assert len(rms) == 6
    assert sorted(group_targets(r)) == [["add", "rsqrt", "mul", "mul"], ["pow", "mean"]], "six kernels become two"
    assert {i for g in r.fusion for i in g.ops} == rms
    rms_bytes = sum(op.bytes_read + op.bytes_written for op in r.ops if op.index in rms)
    assert 2 < rms_bytes / (rms_bytes - sum(g.bytes_saved for g in r.fusion)) < 3, "about 2.3x fewer bytes"
    assert plan_of(r)[0] == "cpu", "per call, the copies in and out make the CPU the better place"


def test_embedding_reads_touched_rows_not_the_table(advise):
    a = advise("embedding.py")
    r = a.report
    (emb,) = ops(r, target="aten.embedding")
    rows = 8192 * 512 * 4
    assert emb.bytes_read == 8192 * 8 + rows and emb.bytes_written == rows, "indices and the gathered rows"
    assert emb.regime == "overhead", "the gather is shorter than its dispatch"
    (total,) = ops(r, target="aten.sum")
    assert kernel_bound(total) == "memory"
    assert r.placement.recommended == "cuda" and plan_of(r) == ("cuda", "cuda_graphs"), "with the table resident the GPU wins"
    table_in = transfer_time_s(a.analysis.device("cuda"), a.analysis.graph.parameters_bytes, "h2d", "pageable")
    assert table_in > 100 * r.total.predicted_s, "copying the table each call dwarfs everything"


def test_conv_big_compute_bound(advise):
    r = advise("conv_big.py").report
    convs = ops(r, category="conv")
    assert len(convs) == 4 and all(kernel_bound(op) == "compute" and 0.25e-3 < op.kernel_s < 1e-3 for op in convs)
    assert all(op.regime == "memory" for op in ops(r, target="aten.relu_"))
    assert [g.kind for g in r.fusion] == ["conv epilogue"] * 4
    assert share(r.total.regime_s, "overhead") < 0.05
    p = r.placement
    assert p.cpu_s > 50 * p.gpu_s, "the GPU computes it two orders of magnitude faster"
    assert p.transfer_s > p.gpu_s and plan_of(r)[0] == "cuda", "per call the copies cost more than the convs"
    assert 1 < p.cpu_s / (p.gpu_s + p.transfer_s) < 5, "and the GPU's margin drops to a few x"


# ---- transformers' models (need transformers) ---------------------------------------------------------------------


def test_hf_bert(advise):
    pytest.importorskip("transformers")
    r = advise("hf_bert.py").report
    assert all(kernel_bound(op) == "compute" for op in ops(r, category="matmul"))
    assert all(kernel_bound(op) == "memory" for op in ops(r, category="norm") + ops(r, target="aten.gelu"))
    assert dominant(r.total.regime_s) == "compute"
    assert sum("native_layer_norm" in g for g in group_targets(r)) >= 24, "each residual add fuses into its LayerNorm"


def test_hf_gpt2(advise):
    pytest.importorskip("transformers")
    r = advise("hf_gpt2.py").report
    assert share(r.total.regime_s, "overhead") > 0.5
    assert 400 < r.total.ops < 600 and 1e9 < r.total.flops < 2e10
    biggest = max(ops(r, category="matmul"), key=lambda op: op.flops)
    assert 50257 in [d for t in biggest.inputs for d in t.shape], "the vocabulary head is the largest GEMM"


def test_hf_llama(advise):
    pytest.importorskip("transformers")
    a = advise("hf_llama.py")
    r = a.report
    assert share(r.total.regime_s, "overhead") > 0.75 and 1100 < r.total.ops < 1500
    assert graph_speedup(a.analysis) > 3
    # the largest op's own work (the model's Python before an op is host time of the program, not of the op)
    assert max(r.ops, key=lambda op: op.predicted_s - op.python_s).module.endswith("lm_head")
    for attn in ops(r, category="attention"):
        q, k, v = attn.inputs[:3]
        assert q.shape[1] == 32 and k.shape[1] == v.shape[1] == 8, "K and V read once per key/value head"


def test_hf_t5(advise):
    pytest.importorskip("transformers")
    r = advise("hf_t5.py").report
    assert share(r.total.regime_s, "overhead") > 0.8 and 800 < r.total.ops < 1100


def test_hf_vit(advise):
    pytest.importorskip("transformers")
    r = advise("hf_vit.py").report
    assert all(kernel_bound(op) == "compute" for op in ops(r, category="matmul"))
    assert dominant(r.total.regime_s) == "compute"
    (patch,) = ops(r, category="conv")
    assert patch.inputs[1].shape == [768, 3, 16, 16]
    assert any(t.shape[0] == 8 * 197 for op in ops(r, category="matmul") for t in op.inputs), "197 tokens per image"


def test_hf_whisper(advise):
    pytest.importorskip("transformers")
    r = advise("hf_whisper.py").report
    encoder = [op for op in r.ops if ".encoder." in f".{op.module}."]
    decoder = [op for op in r.ops if ".decoder." in f".{op.module}."]
    assert sum(op.kernel_s for op in encoder) > sum(op.kernel_s for op in decoder), "the encoder's kernels dominate the device"
    assert max(r.ops, key=lambda op: op.kernel_s) in ops(r, category="attention"), "its attention over 1500 positions first"
    decoder_s = {regime: sum(op.regime_parts().get(regime, 0.0) for op in decoder) for regime in ("compute", "memory", "overhead")}
    # overhead-bound but for its cross-attention over the encoder's 1500 positions, a kernel of
    # about 150 us each (measured on the H100: tests/test_recorded_mechanisms.py)
    assert share(decoder_s, "overhead") > 0.7, "the decoder is overhead-bound"
    assert 300 < len(decoder) < 400 and sum(decoder_s.values()) > sum(op.predicted_s for op in encoder), "and most of the eager time"
    assert share(r.total.regime_s, "overhead") > 0.5
