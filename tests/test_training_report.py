"""A training step analyzed on a profile: phases on the report, memory over the step, advice."""

import json

import pytest
import torch
from torch import nn

from roofline.advice.step_memory import step_memory
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.graph.training import TrainStep
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from tests.conftest import REPO, run_cli

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"


@pytest.fixture(scope="module")
def h100():
    return load_profile_file(PROFILE)


class MLP(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(32, width), nn.Linear(width, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_step_memory_parts_by_hand():
    # batch 8: fc1 (32->64), relu, fc2 (64->10), float32; AdamW: two moments per parameter
    g = capture(MLP(), (torch.randn(8, 32),), train=TrainStep(implementation="foreach"))
    costs = [cost_of(op)[0] for op in g.ops]
    mem = step_memory(g, costs, "cpu", None)
    params = 4 * (32 * 64 + 64 + 64 * 10 + 10)
    assert (mem.weights_bytes, mem.gradients_bytes, mem.optimizer_state_bytes) == (params, params, 2 * params)
    assert mem.inputs_bytes == 8 * 32 * 4 and mem.workspace_bytes == 0
    # saved for backward: relu's output (relu's own backward and fc2's weight gradient read it; fc1's
    # output is freed after relu), the loss's log-softmax (8 x 10) and nll's scalar total weight
    assert 8 * 64 * 4 + 8 * 10 * 4 <= mem.saved_activations_bytes <= 8 * 64 * 4 + 8 * 10 * 4 + 16
    assert mem.peak_bytes >= mem.weights_bytes + mem.optimizer_state_bytes + mem.inputs_bytes
    assert sum(mem.at_peak.values()) == mem.peak_bytes
    assert mem.timeline[-1].phase == "optimizer" and mem.timeline[-1].index == len(g.ops) - 1


def test_gpu_memory_rounds_blocks_and_counts_workspaces():
    g = capture(MLP(), (torch.randn(8, 32),), train=TrainStep(implementation="foreach"))
    costs = [cost_of(op)[0] for op in g.ops]
    cpu, gpu = step_memory(g, costs, "cpu", None), step_memory(g, costs, "cuda", 1 << 30, "9.0")
    assert gpu.workspace_bytes == 2 * (32 << 20)  # the model's thread and autograd's, sm_90
    assert gpu.peak_bytes - gpu.workspace_bytes > cpu.peak_bytes  # every block rounded up to 512 B
    assert gpu.fits and not step_memory(g, costs, "cuda", 1 << 20, "9.0").fits


def test_a_gpu_bias_gradient_over_many_tokens_stages_eight_bytes_an_element(monkeypatch):
    """Autograd sums a Linear's bias gradient over the tokens of a 3-D input; on a GPU ATen's reduce
    kernel stages 8 bytes per element of the gradient for 1024 tokens or more (the H100 measured
    96 MB for 4096 x 3072, none for 512 x 3072), which is where gpt_block's step peaks."""
    import roofline.advice.step_memory as step_memory_module
    from roofline.advice.step_memory import staging_bytes

    def staged(tokens):
        g = capture(nn.Linear(64, 256), (torch.randn(tokens // 8, 8, 64),), train=TrainStep(implementation="foreach"))
        sums = [op for op in g.ops if op.phase == "backward" and op.packet == "aten.sum"]
        return [staging_bytes(op, "cuda") for op in sums], [staging_bytes(op, "cpu") for op in sums], g

    on_gpu, on_cpu, g = staged(4096)
    assert on_gpu == [8 * 4096 * 256] and on_cpu == [0]
    assert staged(512)[0] == [0]
    costs = [cost_of(op)[0] for op in g.ops]
    mem = step_memory(g, costs, "cuda", None, "9.0")
    monkeypatch.setattr(step_memory_module, "staging_bytes", lambda op, device: 0)
    unstaged = step_memory(g, costs, "cuda", None, "9.0")
    (at,) = [op.index for op in g.ops if op.phase == "backward" and op.packet == "aten.sum"]
    during = {p.index: p.bytes for p in mem.timeline}, {p.index: p.bytes for p in unstaged.timeline}
    assert during[0][at] - during[1][at] == 8 * 4096 * 256  # held while the sum runs ...
    assert during[0][at + 1] == during[1][at + 1]  # ... and released after it
    assert mem.peak_bytes >= unstaged.peak_bytes and sum(mem.at_peak.values()) == mem.peak_bytes


def test_activations_grow_with_the_batch():
    small = capture(MLP(), (torch.randn(8, 32),), train=TrainStep(implementation="foreach"))
    large = capture(MLP(), (torch.randn(64, 32),), train=TrainStep(implementation="foreach"))
    mem = [step_memory(g, [cost_of(op)[0] for op in g.ops], "cpu", None) for g in (small, large)]
    # per sample: relu's 64 and log-softmax's 10 float32 values
    assert mem[1].saved_activations_bytes - mem[0].saved_activations_bytes == (64 - 8) * (64 + 10) * 4


def test_training_report_on_the_h100_profile(h100):
    a = Analysis.of(MLP(256), (torch.randn(64, 32),), None, h100, Options(device="cuda", train=TrainStep(), batch_sweep=False))
    r = a.report()
    assert {op.phase for op in r.ops} == {"forward", "backward", "optimizer"}
    t = r.training
    assert t.implementation == "foreach" and t.optimizer == "adamw"  # torch's default on a GPU
    assert [p.phase for p in t.phases] == ["forward", "backward", "optimizer"]
    assert t.predicted_s == pytest.approx(r.total.predicted_s)
    assert sum(p.predicted_s for p in t.phases) == pytest.approx(t.predicted_s, rel=0.05)  # plus the final sync
    mm = {ph: sum(op.flops for op in r.ops if op.phase == ph and op.category == "matmul") for ph in ("forward", "backward")}
    # fc1's input needs no gradient: backward = 2x forward less fc1's input gradient (64 x 32 x 256)
    assert mm["backward"] == 2 * mm["forward"] - 2 * 64 * 32 * 256
    assert {"optimizer_fused", "optimizer_for-loop"} <= set(t.alternatives)
    assert "autocast_bfloat16" in t.alternatives
    assert any(line.startswith("training step (adamw, foreach") for line in r.advice)
    assert any(line.startswith("memory over the step (GPU)") for line in r.advice)
    assert any("no training host costs" in w for w in r.warnings)  # the fixture profile predates them
    # backward ops are attributed to the forward's modules
    assert {op.module for op in r.ops if op.phase == "backward" and op.category == "matmul"} == {"fc1", "fc2"}


def test_advise_train_json_on_a_transformer_block(tmp_path):
    out = tmp_path / "r.json"
    proc = run_cli("advise", "examples/gpt_block.py", "--profile", str(PROFILE), "--train", "--json", str(out), "--no-batch-sweep")
    assert proc.returncode == 0, proc.stderr
    r = json.loads(out.read_text())
    assert all(op["phase"] in ("forward", "backward", "optimizer") for op in r["ops"])
    mm = {ph: sum(op["flops"] for op in r["ops"] if op["phase"] == ph and op["category"] == "matmul") for ph in ("forward", "backward")}
    assert mm["backward"] == 2 * mm["forward"] > 0
    mem = r["training"]["memory"]
    assert mem["peak_bytes"] > 0 and set(mem["at_peak"]) == {"weights", "inputs", "optimizer_state", "gradients", "activations", "workspace"}
    assert "training step" in proc.stdout


def test_train_with_decode_is_one_line():
    proc = run_cli("advise", "examples/mlp_tiny.py", "--profile", str(PROFILE), "--train", "--decode", "4")
    assert proc.returncode == 2 and "--train and --decode" in proc.stderr and "Traceback" not in proc.stderr


def _with_training_host(profile, training):
    part = profile.gpu
    overheads = part.measurements.overheads.model_copy(update=dict(training=training))
    measurements = part.measurements.model_copy(update=dict(overheads=overheads))
    return profile.model_copy(update=dict(gpu=part.model_copy(update=dict(measurements=measurements))))


def test_training_host_costs_price_engine_and_optimizer(h100):
    from roofline.schema.profile import OptimizerHost, Stat, TrainingOverheads

    us = 1e-6
    training = TrainingOverheads(
        grad_record_s=Stat(median_s=1 * us, iqr_s=0, samples=1), autograd_node_s=Stat(median_s=10 * us, iqr_s=0, samples=1),
        optimizers={"adamw:foreach": OptimizerHost(call_s=100 * us, per_parameter_s=7 * us)},
    )
    step = TrainStep()
    plain = Analysis.of(MLP(), (torch.randn(8, 32),), None, h100, Options(device="cuda", train=step, batch_sweep=False))
    timed = Analysis.of(MLP(), (torch.randn(8, 32),), None, _with_training_host(h100, training), Options(device="cuda", train=step, batch_sweep=False))
    g = timed.graph
    host = lambda a, phase: sum(t.host_s for op, t in zip(a.graph.ops, a.timeline().ops) if op.phase == phase)  # noqa: E731
    recorded = sum(op.records_grad for op in g.ops)
    assert recorded > 0 and g.training.autograd_nodes > 0
    assert host(timed, "forward") - host(plain, "forward") == pytest.approx(recorded * 1 * us, rel=1e-6)
    assert host(timed, "backward") - host(plain, "backward") == pytest.approx(g.training.autograd_nodes * 10 * us, rel=1e-6)
    assert host(timed, "optimizer") == pytest.approx(100 * us + 4 * 7 * us, rel=1e-6)  # 4 parameter tensors
    # a foreach step's lead share is billed before its first kernel, the rest spread over its ops: the
    # first op's host time grows by the lead less its own part of it, the phase's total stays
    import roofline.advice.training as training_advice

    first = lambda a: next(t.host_s for op, t in zip(a.graph.ops, a.timeline().ops) if op.phase == "optimizer")  # noqa: E731
    total = 100 * us + 4 * 7 * us
    key = ("adamw", "foreach")
    share = training_advice.OPTIMIZER_LEAD_SHARE[key]
    training_advice.OPTIMIZER_LEAD_SHARE[key] = 0.0
    try:
        spread = Analysis(g, _with_training_host(h100, training), "cuda", Options(device="cuda", train=step, batch_sweep=False))
        assert host(spread, "optimizer") == pytest.approx(total, rel=1e-6)
        w = first(spread) / total  # the first op's share of the spread time
    finally:
        training_advice.OPTIMIZER_LEAD_SHARE[key] = share
    assert share > 0.2 and first(timed) == pytest.approx(first(spread) + share * total * (1 - w), rel=1e-6)
    r = timed.report()
    assert not any("not calibrated" in w or "no training host costs" in w for w in r.warnings)
    # at twice the host's speed scale, the training costs double with the dispatch costs
    assert host(timed.at_host_scale(2.0), "optimizer") == pytest.approx(2 * (100 * us + 4 * 7 * us), rel=1e-6)
    # a phase measured 1.5x slower among the others than alone: its ops' host costs, and only its, grow by 1.5x
    switched = Analysis.of(MLP(), (torch.randn(8, 32),), None,
                           _with_training_host(h100, training.model_copy(update=dict(phase_switch={"forward": 1.5}))),
                           Options(device="cuda", train=step, batch_sweep=False))
    assert host(switched, "forward") == pytest.approx(1.5 * host(timed, "forward"), rel=1e-6)
    assert host(switched, "backward") == pytest.approx(host(timed, "backward"), rel=1e-6)


def test_python_api_takes_train_true(h100):
    from roofline import analyze

    r = analyze(MLP(), (torch.randn(8, 32),), h100, device="cuda", train=True, batch_sweep=False)
    assert r.training is not None and r.training.implementation == "foreach"
    assert analyze(MLP(), (torch.randn(8, 32),), h100, device="cuda", train=False, batch_sweep=False).training is None


def test_throughput_is_written_with_separators():
    from roofline.advice.training import samples_per_s

    assert samples_per_s(17083.4) == "17,083" and samples_per_s(42.17) == "42.2"


def test_adam_is_priced_with_adamw_host_figures():
    from roofline.advice.training import optimizer_host
    from roofline.schema.profile import OptimizerHost, Stat, TrainingOverheads

    stat = Stat(median_s=1e-6, iqr_s=0, samples=1)
    adamw = OptimizerHost(call_s=1e-4, per_parameter_s=7e-6)
    training = TrainingOverheads(grad_record_s=stat, autograd_node_s=stat, optimizers={"adamw:foreach": adamw})
    assert optimizer_host(training, "adam", "foreach") == adamw
    assert optimizer_host(training, "sgd", "foreach") is None and optimizer_host(training, "adam", "fused") is None


def test_train_check_replays_a_recorded_run_without_a_gpu(tmp_path, monkeypatch, capsys):
    """``benchmarks/train_check.py --replay``: a recorded H100 case priced again here against its
    recorded measurements; the errors are this code's prediction over the record's time."""
    import json
    import sys

    from benchmarks import train_check

    record = REPO / "benchmarks" / "results" / "h100_train_check.json"
    out = tmp_path / "replay.json"
    monkeypatch.setattr(sys, "argv", ["train_check.py", "--profile", str(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"),
                                      "--replay", str(record), "--only", "small_mlp", "--json", str(out)])
    assert train_check.main() == 0
    assert "replay of h100_train_check.json" in capsys.readouterr().out
    row = json.loads(out.read_text())["rows"][0]
    measured = next(r for r in json.loads(record.read_text())["rows"] if r["case"] == "small_mlp")["measured_s"]
    assert row["case"] == "small_mlp" and row["measured_s"] == measured
    assert row["error"] == pytest.approx(row["predicted_s"] / measured - 1)
