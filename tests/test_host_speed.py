"""The host-speed index: its calibrated time, the scaling of host costs, and its timing beside a model."""

import pytest
import torch

from roofline.checks import attach_host_speed, attach_measurement
from roofline.measure.device import device_for
from roofline.measure.host_speed import MIN_ROUNDS, HostSpeed, host_speed_beside
from roofline.measure.run import measure
from roofline.model.host import HOST_FIELDS, calibrated_index_s, scaled_overheads, with_host_scale
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from tests.conftest import REPO

H100 = REPO / "tests" / "fixtures" / "h100_profile.json"


def test_calibrated_index_is_the_interleaved_sum_of_the_representative_ops():
    ov = load_profile_file(H100).gpu.measurements.overheads
    by_op = {k: v.median_s for k, v in ov.dispatch_by_op_s.items()}
    # the representative view call makes two views, whose dispatch is stored per view
    expected = ov.interleave_factor * (sum(by_op.values()) + by_op["view"])
    assert calibrated_index_s(ov) == pytest.approx(expected)
    # the mix the index times beside a model holds exactly the ops whose costs make up that sum
    # (an older profile calibrated fewer kinds: its index mixes those)
    from roofline.graph.capture import capture
    from roofline.hostmix import representative_ops
    from roofline.measure.host_speed import index_call

    assert set(representative_ops("cpu")) >= set(ov.dispatch_by_op_s)
    full, profiles = capture(index_call("cpu"), (), real=True), capture(index_call("cpu", ov.dispatch_by_op_s), (), real=True)
    assert len(profiles.ops) < len(full.ops)


def test_scaling_moves_host_costs_and_leaves_device_costs():
    ov = load_profile_file(H100).gpu.measurements.overheads
    doubled = scaled_overheads(ov, 2.0)
    for name in HOST_FIELDS:
        before, after = getattr(ov, name), getattr(doubled, name)
        if before is not None:
            assert after.median_s == pytest.approx(2 * before.median_s) and after.iqr_s == pytest.approx(2 * before.iqr_s)
    assert all(doubled.dispatch_by_op_s[k].median_s == pytest.approx(2 * v.median_s) for k, v in ov.dispatch_by_op_s.items())
    assert doubled.kernel_min_s == ov.kernel_min_s and doubled.graph_kernel_s == ov.graph_kernel_s
    assert doubled.interleave_factor == ov.interleave_factor
    assert calibrated_index_s(doubled) == pytest.approx(2 * calibrated_index_s(ov))


def test_with_host_scale_copies_and_leaves_the_profile_alone():
    profile = load_profile_file(H100)
    before = profile.gpu.measurements.overheads.dispatch_s.median_s
    slow = with_host_scale(profile, "cuda", 1.5)
    assert slow.gpu.measurements.overheads.dispatch_s.median_s == pytest.approx(1.5 * before)
    assert profile.gpu.measurements.overheads.dispatch_s.median_s == before
    assert slow.host.measurements.overheads == profile.host.measurements.overheads  # the other part untouched
    assert slow.gpu.measurements.matmul == profile.gpu.measurements.matmul


def test_a_profile_moved_to_another_host_speed_moves_its_training_costs_too():
    """A profile rewritten at another host speed (--host now, calibrate.host_level) moves the training
    step's host costs with the eager ones; a prediction at another speed (at_host_scale) leaves them to
    the dispatch's ratio (roofline.advice.training)."""
    from roofline.model.host import moved_host_costs
    from roofline.schema.profile import OptimizerHost, TrainingOverheads

    ov = load_profile_file(H100).gpu.measurements.overheads
    stat = ov.dispatch_s
    ov = ov.model_copy(update=dict(training=TrainingOverheads(
        grad_record_s=stat, autograd_node_s=stat, optimizers={"adamw:foreach": OptimizerHost(call_s=1e-4, per_parameter_s=1e-6)})))
    moved = moved_host_costs(ov, 2.0)
    assert moved.dispatch_s.median_s == pytest.approx(2 * ov.dispatch_s.median_s)
    assert moved.training.grad_record_s.median_s == pytest.approx(2 * stat.median_s)
    assert moved.training.autograd_node_s.median_s == pytest.approx(2 * stat.median_s)
    assert moved.training.optimizers["adamw:foreach"].call_s == pytest.approx(2e-4)
    assert moved.training.optimizers["adamw:foreach"].per_parameter_s == pytest.approx(2e-6)
    assert scaled_overheads(ov, 2.0).training == ov.training


def test_host_speed_scale_is_now_over_calibrated():
    assert HostSpeed(index_now_s=3e-4, index_calibrated_s=2e-4, blocks=9).scale == pytest.approx(1.5)


def test_the_index_and_the_model_alternate_and_warm_up_calls_are_not_timed():
    calls = []

    def model():
        calls.append("model")

    ov = load_profile_file(H100).gpu.measurements.overheads
    timing, speed = host_speed_beside(model, "cpu", ov, budget_s=0.0)
    assert speed.blocks == MIN_ROUNDS and speed.index_calibrated_s == pytest.approx(calibrated_index_s(ov))
    # each round: one untimed call, then timed calls for MODEL_BLOCK_S (at least one)
    assert len(calls) == speed.blocks + timing.n and timing.n >= speed.blocks


def test_a_host_bound_prediction_follows_the_scale(cpu_quick_profile_path):
    profile = load_profile_file(cpu_quick_profile_path)
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(6)]).eval()
    x = torch.randn(1, 8)
    analysis = Analysis.of(model, (x,), None, profile, Options(device="cpu", batch_sweep=False))
    report = analysis.report()
    m = measure(analysis.graph, model, (x,), {}, device_for(profile, "cpu"), budget_s=0.05, per_op=False, overheads=analysis.dev.overheads)
    assert m.host_speed is not None and m.host_speed.blocks >= MIN_ROUNDS and m.total.median_s > 0
    attach_measurement(report, m, analysis)
    attach_host_speed(report, analysis, 2.0)
    assert report.total.host_scale == pytest.approx(2.0)
    # tiny Linears at batch 1 are all host time on the CPU: twice the host, nearly twice the time
    assert 1.6 * report.total.predicted_s < report.total.predicted_at_host_now_s <= 2.0 * report.total.predicted_s
    # the prediction at a host scale reuses the capture and its costs
    scaled = analysis.at_host_scale(2.0)
    assert scaled.graph is analysis.graph and scaled.costs is analysis.costs


def test_program_factor_multiplies_every_eager_host_cost():
    from roofline.model.device import DeviceModel
    from roofline.model.host import PROGRAM_FACTOR_GPU

    profile = load_profile_file(H100)
    ov = profile.gpu.measurements.overheads
    plain = DeviceModel(profile.gpu, "cuda")
    profile.gpu.measurements.overheads = ov.model_copy(update=dict(program_factor=1.3))
    scaled = DeviceModel(profile.gpu, "cuda")
    ratio = 1.3 / plain.program_factor  # a profile that sets no factor takes the model's
    assert plain.program_factor == PROGRAM_FACTOR_GPU and scaled.program_factor == 1.3
    assert scaled.dispatch_s("addmm", 4) == pytest.approx(ratio * plain.dispatch_s("addmm", 4))
    assert scaled.module_call_s == pytest.approx(ratio * plain.module_call_s)
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(20)])
    x = torch.randn(2, 8)
    host = [Analysis.of(model, (x,), None, p, Options(device="cuda", batch_sweep=False)).timeline().host_s for p in (H100, profile)]
    assert host[1] == pytest.approx(ratio * host[0], rel=1e-6)
    # the host-speed index is the mix's as calibrated: the factor does not move it
    assert calibrated_index_s(profile.gpu.measurements.overheads) == pytest.approx(calibrated_index_s(ov))


# ---- the host read before pricing (Options.host, roofline advise --host) ----


def _mlp():
    return torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(6)]).eval(), (torch.randn(1, 8),)


def test_host_read_now_prices_at_the_index_read_here(cpu_quick_profile_path):
    from roofline.pipeline import read_host_level

    profile = load_profile_file(cpu_quick_profile_path)
    model, args = _mlp()
    analysis = Analysis.of(model, args, None, profile, Options(device="cpu", batch_sweep=False, host="now"))
    read = analysis.host_read
    assert read is not None and read.applied and 0.2 <= read.scale <= 5.0
    base = profile.host.measurements.overheads
    assert analysis.dev.overheads.dispatch_s.median_s == pytest.approx(read.scale * base.dispatch_s.median_s)
    assert analysis.dev.overheads.kernel_min_s == base.kernel_min_s
    report = analysis.report()
    assert report.profile.host_scale_read == pytest.approx(read.scale)
    # the profile's host level (the default) reads nothing
    for options in (Options(device="cpu", host="profile"), Options(device="cpu")):
        same, none = read_host_level(profile, "cpu", options)
        assert none is None and same is profile
    plain = Analysis.of(model, args, None, profile, Options(device="cpu", batch_sweep=False, host="profile")).report()
    assert plain.profile.host_scale_read is None


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU profile's device is absent only on a CPU-only machine")
def test_host_now_off_the_profiled_gpu_refuses():
    from roofline.errors import DeviceNotAvailable
    from roofline.pipeline import read_host_level

    profile = load_profile_file(H100)
    with pytest.raises(DeviceNotAvailable, match="--host now"):
        read_host_level(profile, "cuda", Options(device="cuda", host="now"))


def test_an_implausible_read_is_not_applied_and_is_warned_about(cpu_quick_profile_path, monkeypatch):
    import roofline.measure.host_speed as host_speed

    monkeypatch.setattr(host_speed, "read_host_speed", lambda device, overheads: HostSpeed(index_now_s=1.0, index_calibrated_s=1e-4, blocks=0))
    profile = load_profile_file(cpu_quick_profile_path)
    model, args = _mlp()
    analysis = Analysis.of(model, args, None, profile, Options(device="cpu", batch_sweep=False, host="now"))
    assert analysis.host_read is not None and not analysis.host_read.applied
    assert analysis.dev.overheads == profile.host.measurements.overheads
    report = analysis.report()
    assert report.profile.host_scale_read is None
    assert any("x10000.00" in w and "--host profile" in w for w in report.warnings)


def test_a_host_read_scales_a_host_bound_prediction(cpu_quick_profile_path, monkeypatch):
    import roofline.measure.host_speed as host_speed

    profile = load_profile_file(cpu_quick_profile_path)
    index_s = calibrated_index_s(profile.host.measurements.overheads)
    monkeypatch.setattr(host_speed, "read_host_speed", lambda device, overheads: HostSpeed(index_now_s=2 * index_s, index_calibrated_s=index_s, blocks=0))
    model, args = _mlp()
    plain = Analysis.of(model, args, None, profile, Options(device="cpu", batch_sweep=False, host="profile"))
    read = Analysis.of(model, args, None, profile, Options(device="cpu", batch_sweep=False, host="now"))
    assert read.host_read.scale == pytest.approx(2.0)
    # tiny Linears at batch 1 are host time: the prediction at the read is the one at that host scale
    assert read.total_s == pytest.approx(plain.at_host_scale(2.0).total_s, rel=1e-9)
    assert 1.6 * plain.total_s < read.total_s
