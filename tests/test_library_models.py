"""Models as people write them: transformers' models built from configs (random weights), keyword
inputs, cache objects in the outputs, nn.TransformerEncoder's fused fast path. Each runs through the
CLI on the shipped H100 profile without a traceback, and its matmul, convolution and attention FLOPs
equal torch.utils.flop_counter's on the same model with attention in its explicit-matmul form."""

import json

import pytest
import torch

pytest.importorskip("transformers")

from roofline.graph.loading import load_model_file  # noqa: E402
from roofline.pipeline import Analysis, Options  # noqa: E402
from tests.conftest import REPO, run_cli  # noqa: E402

MODELS = ["hf_gpt2.py", "hf_llama.py", "hf_bert.py", "hf_t5.py", "hf_vit.py", "hf_whisper.py", "transformer_encoder.py"]
GEMM_CATEGORIES = ("matmul", "conv", "attention")


def gemm_flops(costs) -> int:
    """FLOPs of GEMM-shaped work: a fused native op's parts counted one by one."""
    total = 0
    for c in costs:
        if c.parts:
            total += gemm_flops([p for _, p in c.parts])
        elif c.category in GEMM_CATEGORIES:
            total += c.flops
    return total


def reference_flops(model, args, kwargs) -> int:
    """FlopCounterMode on the same model under fake CPU tensors, with attention as explicit matmuls
    (SDPA's math backend) and the transformer layers' fused fast paths off."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from roofline.graph.provenance import named_state
    from roofline.graph.structure import map_tensors

    mode = FakeTensorMode(allow_non_fake_inputs=True)

    def fake(t):
        with mode:
            return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype)

    state = {name: fake(t) for name, t in named_state(model)}
    fast_path = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with mode, torch.no_grad(), sdpa_kernel([SDPBackend.MATH]), FlopCounterMode(display=False) as counter:
            torch.func.functional_call(model.eval(), state, map_tensors(args, fake), map_tensors(kwargs, fake), strict=False)
    finally:
        torch.backends.mha.set_fastpath_enabled(fast_path)
    return counter.get_total_flops()


@pytest.mark.parametrize("example", MODELS)
def test_matmul_and_attention_flops_equal_flop_counter(example):
    loaded = load_model_file(REPO / "examples" / example)
    analysis = Analysis.of(loaded.model, loaded.args, loaded.kwargs, "nvidia-h100-80gb-hbm3", Options(batch_sweep=False), name=example)
    ours = gemm_flops(analysis.costs)
    assert not [op.name for op, ok in zip(analysis.graph.ops, analysis.supported) if not ok]
    assert ours == pytest.approx(reference_flops(loaded.model, loaded.args, loaded.kwargs), rel=0.01)


def test_the_cli_advises_on_library_models(tmp_path):
    # the CLI on each model in turn: every run exits 0, writes its report, and prints no traceback
    for name in ["hf_gpt2.py", "hf_llama.py", "hf_bert.py", "hf_t5.py", "hf_vit.py", "transformer_encoder.py"]:
        out = tmp_path / (name + ".json")
        proc = run_cli("advise", str(REPO / "examples" / name), "--profile", "nvidia-h100-80gb-hbm3", "--no-batch-sweep", "--json", str(out))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (name, proc.stderr[-2000:])
        report = json.loads(out.read_text())
        assert report["ops"] and report["total"]["predicted_s"] > 0 and report["total"]["flops"] > 0


def test_gpt2_returns_its_cache_and_the_cache_is_an_output():
    loaded = load_model_file(REPO / "examples" / "hf_gpt2.py")
    analysis = Analysis.of(loaded.model, loaded.args, loaded.kwargs, "nvidia-h100-80gb-hbm3", Options(batch_sweep=False))
    # logits and, per layer, the cached keys and values
    assert len(analysis.graph.outputs) == 1 + 2 * 12
    assert analysis.graph.outputs[0].shape == (1, 32, 50257)


def test_the_encoder_fast_path_is_captured_as_one_op_per_layer_and_priced_by_its_kernels():
    loaded = load_model_file(REPO / "examples" / "transformer_encoder.py")
    analysis = Analysis.of(loaded.model, loaded.args, loaded.kwargs, "nvidia-h100-80gb-hbm3", Options(batch_sweep=False))
    assert [op.name for op in analysis.graph.ops] == ["aten._transformer_encoder_layer_fwd.default"] * 4
    cost = analysis.costs[0]
    names = [op.name for op, _ in cost.parts]
    # the SDPA path: the input projection, the output projection and the FFN's two, each a GEMM with its bias
    assert names.count("aten.addmm.default") == 4 and "aten.scaled_dot_product_attention.default" in names
    assert cost.kernels == sum(c.kernels for _, c in cost.parts) and cost.flops == sum(c.flops for _, c in cost.parts)
    # its kernel time is the sum of its kernels' times on the H100
    kernel, *_ = analysis.kernels()[0]
    from roofline.model.kernels import kernel_s

    assert kernel == pytest.approx(sum(kernel_s(op, c, analysis.dev)[0] for op, c in cost.parts))


def test_a_fused_native_op_runs_its_parts_on_the_two_queues():
    # The encoder layer issues its kernels one by one from C++: each part's kernel starts once that
    # part is issued and overlaps the issue of the next, so the layer is its parts on the two queues,
    # not all its host time followed by all its kernels.
    from roofline.model.timeline import Schedule, dispatch_kind, part_pieces, predict_timeline

    loaded = load_model_file(REPO / "examples" / "transformer_encoder.py")
    analysis = Analysis.of(loaded.model, loaded.args, loaded.kwargs, "nvidia-h100-80gb-hbm3", Options(batch_sweep=False))
    dev, graph, costs, kernels = analysis.dev, analysis.graph, analysis.costs, analysis.kernels()
    tl = predict_timeline(graph, costs, dev, kernels=kernels)
    first = tl.ops[0]
    distinct = len({dispatch_kind(op, c) for op, c in zip(graph.ops, costs)})
    pieces = part_pieces(costs[0], kernels[0][0], dev, distinct)
    assert len(pieces) == costs[0].kernels and sum(k for _, k in pieces) == pytest.approx(kernels[0][0])
    # by hand: the host time outside the parts (the op issues its last part at issue_s), then each
    # part issued and run in turn from an idle device
    h, e = first.issue_s - sum(p for p, _ in pieces), 0.0
    for p, k in pieces:
        h += p
        e = max(h, e) + k
    assert first.end_s == pytest.approx(e)
    # the overlap makes it shorter than issuing everything before any kernel runs
    assert first.end_s < first.issue_s + kernels[0][0]
    # the composable schedule prices the same program the same way
    assert Schedule(graph, costs, dev, kernels).total_s() == pytest.approx(tl.total_s)
