"""LLM decode (--decode N): the step graph fitted over the cache length equals a captured one, the
cache's bytes per token, steps chained on the timeline, the loop measured, and refusals."""

import json

import pytest
import torch

transformers = pytest.importorskip("transformers")

from roofline.decode import DecodeAnalysis  # noqa: E402
from roofline.errors import RooflineError  # noqa: E402
from roofline.graph.decode import DecodeError, _capture_step, decode_graphs, step_inputs  # noqa: E402
from roofline.model.timeline import apply_step  # noqa: E402
from roofline.pipeline import Options  # noqa: E402
from tests.conftest import REPO, run_cli  # noqa: E402

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"


def tiny_gpt2(batch=2, prompt=8):
    cfg = transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=1000, n_positions=256)
    with torch.device("meta"):
        model = transformers.GPT2LMHeadModel(cfg).eval()
        ids = torch.zeros((batch, prompt), dtype=torch.long)
    return model, ids


def tiny_llama(batch=1, prompt=8):
    cfg = transformers.LlamaConfig(
        hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=1000,
    )
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(cfg).eval()
        ids = torch.zeros((batch, prompt), dtype=torch.long)
    return model, ids


def signature(graph):
    return [(op.name, [t.shape for t in op.tensor_inputs()], [t.shape for t in op.outputs]) for op in graph.ops]


def test_fitted_step_equals_the_captured_step_far_from_the_fit():
    model, ids = tiny_gpt2()
    graphs = decode_graphs(model, (ids,))
    assert graphs.derived
    step = 6  # captured: steps 0-2; this one is computed from their fit
    fitted = graphs.step(graphs.prompt_tokens + step)
    captured = _capture_step(model, (ids,), {"use_cache": True}, step, "cpu", None, True)
    assert signature(fitted) == signature(captured)
    assert fitted.module_calls == captured.module_calls
    # the cache read by the step's attention has prompt + step + 1 positions
    attention = [op for op in fitted.ops if "attention" in op.name]
    assert attention and attention[0].tensor_inputs()[1].shape[2] == 8 + step + 1


def test_cache_bytes_per_token_are_keys_and_values_of_every_layer():
    model, ids = tiny_llama(batch=3)
    graphs = decode_graphs(model, (ids,))
    # 2 layers x (keys + values) x 2 kv heads x head dim 32 x fp32, for 3 sequences (grouped-query attention: kv heads, not heads)
    assert graphs.cache_bytes_per_token == 2 * 2 * 2 * 32 * 4 * 3
    assert graphs.cache_bytes(0) == graphs.cache_bytes_per_token * 8
    # each call's own module calls, as a plain capture of the prompt counts them
    from roofline.graph.capture import capture

    assert graphs.prefill.module_calls == capture(model, (ids,), {"use_cache": True}).module_calls
    assert all(g.module_calls == graphs.prefill.module_calls for g in graphs.captured_steps.values())


def test_steps_chain_on_the_timeline_and_grow_with_the_cache():
    model, ids = tiny_gpt2(batch=4, prompt=16)
    d = DecodeAnalysis.of(model, (ids,), None, str(PROFILE), Options(device="cuda"), new_tokens=5)
    r = d.report()
    assert len(r.step_s) == 5 and r.decode_s == pytest.approx(sum(r.step_s))
    # the loop's end: the prefill's map, then each step's, applied to an idle start, plus one sync
    prefill, steps = d._run_steps(d.prefill.dev)
    h, e = apply_step(prefill, 0.0, 0.0)
    for m in steps:
        h, e = apply_step(m, h, e)
    sync = d.prefill.dev.overheads.synchronize_s.median_s
    assert r.total_s == pytest.approx(max(h, e) + sync)
    assert r.prefill_s == pytest.approx(d.prefill.total_s)
    # each step reads one more cache position than the last: never cheaper on the device
    device_s = [sum(k[0] for k in d.step(i).kernels()) for i in range(5)]
    assert all(b >= a for a, b in zip(device_s, device_s[1:]))
    assert r.cache_bytes_final == r.cache_bytes_prefill + 5 * r.cache_bytes_per_token
    assert r.memory_floor_per_token_s > 0 and r.per_token_s > r.memory_floor_per_token_s
    # a slower host makes an overhead-bound step slower
    assert d.report(host_scale=2.0).per_token_s > r.per_token_s


def test_many_steps_are_priced_on_a_sample_and_interpolated(monkeypatch):
    import roofline.decode as decode

    model, ids = tiny_gpt2(batch=1, prompt=4)
    d = DecodeAnalysis.of(model, (ids,), None, str(PROFILE), Options(device="cuda"), new_tokens=9)
    full = d.report()
    monkeypatch.setattr(decode, "PRICED_STEPS_MAX", 3)
    assert d.priced_steps() == [0, 3, 6, 8]
    sampled = d.report()
    assert len(sampled.step_s) == 9
    assert sampled.total_s == pytest.approx(full.total_s, rel=0.01)


def test_step_inputs_extend_the_mask_and_drop_prompt_only_inputs():
    ids = torch.zeros((2, 5), dtype=torch.long)
    mask = torch.ones((2, 5), dtype=torch.long)
    args, kwargs = step_inputs((), {"input_ids": ids, "attention_mask": mask, "token_type_ids": ids}, step=3)
    assert args == () and kwargs["input_ids"].shape == (2, 1) and kwargs["attention_mask"].shape == (2, 9)
    assert "token_type_ids" not in kwargs and kwargs["use_cache"] is True


def test_a_model_without_a_cache_is_refused_in_one_line():
    model = torch.nn.Sequential(torch.nn.Embedding(100, 16), torch.nn.Linear(16, 100))
    with pytest.raises(DecodeError, match="past_key_values"):
        decode_graphs(model, (torch.zeros((1, 4), dtype=torch.long),))
    with pytest.raises(RooflineError, match="token ids"):
        decode_graphs(model, (torch.zeros((1, 4, 3)),))


def test_measured_loop_on_the_cpu():
    from roofline.measure.decode import measure_decode

    cfg = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=32, vocab_size=100, n_positions=64)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    m = measure_decode(model, (torch.zeros((1, 4), dtype=torch.long),), {}, "cpu", 24, None, rounds=2)
    # the fastest samples: another program on the machine only adds time (a median under load can invert);
    # 24 steps keep the loop well above its prefill when a loaded test run stalls every prefill sample
    assert m.loop.min_s > m.prefill.min_s > 0 and m.per_token_s > 0 and m.host_speed is None


def test_cli_decode_writes_the_loop(tmp_path):
    model_file = tmp_path / "tiny_lm.py"
    model_file.write_text(
        "import torch, transformers\n"
        "model = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=2, n_head=4, n_embd=64, vocab_size=1000))\n"
        "example_inputs = {'input_ids': torch.zeros((1, 8), dtype=torch.long), 'attention_mask': torch.ones((1, 8), dtype=torch.long)}\n"
    )
    out = tmp_path / "r.json"
    proc = run_cli("advise", str(model_file), "--profile", str(PROFILE), "--decode", "4", "--json", str(out), "--no-batch-sweep")
    assert proc.returncode == 0, proc.stderr
    assert "per token" in proc.stdout and "decode:" in proc.stdout
    decode = json.loads(out.read_text())["decode"]
    assert decode["new_tokens"] == 4 and len(decode["step_s"]) == 4 and decode["prompt_tokens"] == 8
    no_cache = tmp_path / "mlp.py"
    no_cache.write_text("import torch\nmodel = torch.nn.Sequential(torch.nn.Embedding(100, 8), torch.nn.Linear(8, 8))\nexample_inputs = (torch.zeros((1, 8), dtype=torch.long),)\n")
    proc = run_cli("advise", str(no_cache), "--profile", str(PROFILE), "--decode", "4")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "past_key_values" in proc.stderr
