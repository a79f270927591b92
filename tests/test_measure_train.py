"""Real training steps on the CPU: the step and its phases timed, the peak of memory against the
prediction from the capture, and the training host costs measured."""

import torch
from torch import nn

from roofline.advice.step_memory import step_memory
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.graph.training import PHASES, TrainStep
from roofline.measure.train import measure_step
from roofline.measure.training_host import measure_training_host


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))


def test_measured_step_and_its_peak_memory():
    x = torch.randn(32, 64)
    step = TrainStep(implementation="for-loop")
    m = measure_step(mlp(), (x,), {}, step, "cpu", budget_s=0.1)
    assert m.total.median_s > 0 and set(m.phases_s) == set(PHASES) and all(v > 0 for v in m.phases_s.values())
    g = capture(mlp(), (x,), train=step)
    predicted = step_memory(g, [cost_of(op)[0] for op in g.ops], "cpu", None).peak_bytes
    # the profiler's allocations over a real step against the liveness of the captured values
    assert abs(predicted - m.peak_bytes) <= 0.05 * m.peak_bytes


def test_training_host_costs_are_measured():
    with torch.no_grad():  # as calibration calls it: the measurement turns grad on itself
        t = measure_training_host("cpu", rounds=1)
    assert 0 < t.grad_record_s.median_s < 1e-3 and 0 < t.autograd_node_s.median_s < 1e-3
    assert {"adamw:for-loop", "adamw:foreach", "sgd:for-loop"} <= set(t.optimizers)
    assert all(o.call_s + o.per_parameter_s > 0 for o in t.optimizers.values())
    assert set(t.phase_switch) == {"forward", "backward", "optimizer"} and all(f >= 1.0 for f in t.phase_switch.values())


def test_peak_memory_is_measured_before_the_timing(monkeypatch):
    """The host-speed index and the timing protocol may allocate and keep library workspaces; the
    step's peak is taken before either runs, so they are never counted as the step's."""
    import roofline.measure.train as train

    order = []
    monkeypatch.setattr(train, "_peak_bytes", lambda real: order.append("peak") or 1)
    real_time_fn = train.time_fn
    monkeypatch.setattr(train, "time_fn", lambda *a, **k: order.append("timing") or real_time_fn(*a, **k))
    monkeypatch.setattr(train, "_phases", lambda real: order.append("phases") or {p: 1.0 for p in PHASES})
    train.measure_step(mlp(), (torch.randn(4, 64),), {}, TrainStep(implementation="for-loop"), "cpu", budget_s=0.01)
    assert order[0] == "peak" and {"timing", "phases"} <= set(order)


def test_garbage_is_collected_before_the_peak(monkeypatch):
    """Tensors of earlier work that only reference cycles keep are collected before the step's peak is
    taken (on a GPU, torch.cuda.max_memory_allocated would count them)."""
    import roofline.measure.train as train

    order = []
    monkeypatch.setattr(train.gc, "collect", lambda *a: order.append("gc") or 0)
    real = train.RealStep(mlp(), (torch.randn(4, 64),), {}, TrainStep(implementation="for-loop"), "cpu")
    monkeypatch.setattr(real, "run_after_zero_grad", lambda: order.append("step"))
    monkeypatch.setattr(real, "resident_bytes", lambda: 0)
    train._peak_bytes(real)
    assert order[:2] == ["gc", "step"]


def test_subnormal_gradients_on_the_cpu_are_flagged():
    from roofline.measure.train import subnormal_note

    tiny = torch.finfo(torch.float32).tiny
    clean = [torch.randn(1000), torch.zeros(10)]
    assert subnormal_note(clean, "cpu") is None
    dirty = [torch.randn(1000), torch.full((10,), tiny / 8)]  # 10 of 1010 values below the smallest normal float
    note = subnormal_note(dirty, "cpu")
    assert note is not None and "10 of the step's 1,010" in note and "set_flush_denormal" in note
    assert subnormal_note(dirty, "cuda") is None  # a GPU computes with them at full speed
    assert subnormal_note([torch.randn(100_000), torch.full((1,), tiny / 8)], "cpu") is None  # one in 100,000: below the share


def test_measured_steps_keep_the_initial_parameters():
    """A measured step runs the whole optimizer (its state exists, its step count grows) at a learning
    rate of zero, so that repeating one batch cannot drive the model into subnormal gradients."""
    from roofline.measure.train import RealStep

    model = mlp()
    before = [p.detach().clone() for p in model.parameters()]
    real = RealStep(model, (torch.randn(4, 64),), {}, TrainStep(optimizer="adamw", implementation="for-loop", lr=0.5), "cpu")
    for _ in range(3):
        real()
    assert all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    state = real.optimizer.state[real.params[0]]
    assert float(state["step"]) == 3 and state["exp_avg"].abs().sum() > 0


def test_zero_second_moments_on_a_cpu_slow_at_them_are_flagged():
    """Exact zeros in Adam's exp_avg_sq (dead units' parameters) cost a CPU whose sqrt is slow on zeros
    time that no shape-based prediction has: the note names it when it is a share of the step."""
    from roofline.measure.train import zero_sqrt_note

    params = [torch.nn.Parameter(torch.randn(100, 100))]
    opt = torch.optim.AdamW(params, lr=0.0, foreach=False)
    grad = torch.randn(100, 100)
    grad[:, :30] = 0  # 3,000 zeros
    params[0].grad = grad
    opt.step()
    note = zero_sqrt_note(opt, step_s=100e-6, device="cpu", extra_s=2e-9)  # 6 us of a 100 us step
    assert note is not None and "3,000 of the optimizer's 10,000" in note and "fused=True" in note
    assert zero_sqrt_note(opt, step_s=1e-3, device="cpu", extra_s=2e-9) is None  # 0.6% of the step
    assert zero_sqrt_note(opt, step_s=100e-6, device="cpu", extra_s=0.0) is None  # a CPU not slow on zeros
    assert zero_sqrt_note(opt, step_s=100e-6, device="cuda", extra_s=2e-9) is None
    fused = torch.optim.AdamW(params, lr=0.0, fused=True)
    fused.step()
    assert zero_sqrt_note(fused, step_s=100e-6, device="cpu", extra_s=2e-9) is None  # its kernel does not pay it
