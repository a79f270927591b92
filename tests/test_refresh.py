"""``python -m calibrate.refresh``: one GPU stage measured again and put into a profile, the rest as it was."""

import json

import pytest
import torch

import calibrate.refresh as refresh_mod
from roofline.profiles import load_profile_file, save_profile
from roofline.schema.profile import GemmRatioCurve, GemmRatioPoint, Stat
from tests.conftest import REPO

H100 = REPO / "tests" / "fixtures" / "h100_profile.json"


@pytest.fixture
def fake_stage(monkeypatch):
    """The gemm_ratios stage replaced by one that records how it was called and returns one curve."""
    stat = Stat(median_s=2e-5, iqr_s=1e-7, samples=9)
    curve = GemmRatioCurve(kind="addmm", dtype="float32", points=[GemmRatioPoint(m=64, n=768, k=1024, time=stat, reference=stat)])
    seen = {}

    def fake(device, *, budget_s, warnings, quick):
        seen.update(device=device, budget_s=budget_s, quick=quick, grad=torch.is_grad_enabled())
        warnings.append("one noisy point")
        return [curve]

    monkeypatch.setitem(refresh_mod.STAGES, "gemm_ratios", refresh_mod.STAGES["gemm_ratios"]._replace(measure=fake))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: type("P", (), {"total_memory": 80 << 30})())
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: seen.update(current=device))
    return curve, seen


def test_refresh_replaces_only_its_stage_and_says_when(fake_stage):
    curve, seen = fake_stage
    before = load_profile_file(H100)
    after, warnings = refresh_mod.refresh(before, "gemm_ratios", "cuda:1")
    # calibration's setting: the device made current, no autograd, the full plan's point budget
    assert seen["device"] == seen["current"] == "cuda:1" and not seen["grad"] and not seen["quick"]
    assert seen["budget_s"] == pytest.approx(refresh_mod.gpu_plan(False, 80 << 30).point_budget_s / 2)
    assert after.gpu.measurements.gemm_ratios == [curve] and warnings == ["one noisy point"]
    assert after.gpu.measurements.matmul == before.gpu.measurements.matmul
    assert after.gpu.measurements.overheads == before.gpu.measurements.overheads
    assert after.calibration.refreshed[-1].startswith("gemm_ratios ") and "gpu gemm ratios" in after.calibration.stage_seconds
    assert before.gpu.measurements.gemm_ratios != [curve]  # the profile given is left as it was


def test_a_quick_profile_is_refreshed_with_the_quick_plan(fake_stage):
    _, seen = fake_stage
    quick = load_profile_file(H100)
    quick = quick.model_copy(update=dict(calibration=quick.calibration.model_copy(update=dict(quick=True))))
    refresh_mod.refresh(quick, "gemm_ratios", "cuda:0")
    assert seen["quick"] and seen["budget_s"] == pytest.approx(refresh_mod.gpu_plan(True, 80 << 30).point_budget_s / 2)
    assert refresh_mod.gpu_plan(True, 80 << 30).point_budget_s != refresh_mod.gpu_plan(False, 80 << 30).point_budget_s


def test_a_rewritten_profile_keeps_its_files_indent(tmp_path):
    profile = load_profile_file(H100)
    source = tmp_path / "indent2.json"
    source.write_text(json.dumps(json.loads(H100.read_text()), indent=2) + "\n")
    save_profile(profile, source, keep_layout=True)
    assert source.read_text().splitlines()[1].startswith('  "') and not source.read_text().splitlines()[1].startswith('   ')
    out = tmp_path / "new.json"
    save_profile(profile, out, keep_layout=True, layout_of=source)  # a new file in the source's layout
    assert out.read_text().splitlines()[1].startswith('  "')
    save_profile(profile, out)  # the default layout
    assert out.read_text().splitlines()[1].startswith(' "') and not out.read_text().splitlines()[1].startswith('  ')
    assert load_profile_file(out).model_dump() == profile.model_dump()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the profile's GPU is absent only on a CPU-only machine")
def test_refresh_refuses_in_one_line(tmp_path, capsys):
    assert refresh_mod.main([str(H100), "--stage", "gemm_ratios", "--output", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "calibrate.refresh" in err[0] and "CUDA" in err[0]
    assert refresh_mod.main([str(tmp_path / "missing.json"), "--stage", "gemm_ratios"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert not (tmp_path / "o.json").exists()


def test_the_conv_stage_measures_calibrations_shapes_in_every_conv_dtype(monkeypatch):
    """The dense convolutions as calibration measures them: the full plan's shapes (the channel
    sample included), each dtype, keyed, at the conv stage's point budget."""
    calls = []

    def fake_measure(dtype, shapes, device, *, budget_s, warnings, keyed, progress=None):
        calls.append((dtype, list(shapes), device, budget_s, keyed))
        return dtype

    monkeypatch.setattr(refresh_mod.conv, "measure_conv", fake_measure)
    profiled = []
    monkeypatch.setattr(refresh_mod.conv, "with_kernel_times", lambda curves, device, warnings: profiled.append(curves) or curves)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: type("P", (), {"total_memory": 80 << 30})())
    plan = refresh_mod.gpu_plan(False, 80 << 30)
    # the mechanism families take half the point budget, the convolutions calibration's whole one
    assert refresh_mod.STAGES["conv"].budget_share == 1.0 and refresh_mod.STAGES["gemm_ratios"].budget_share == 0.5
    got = refresh_mod.measure_convs("cuda:0", budget_s=plan.point_budget_s, warnings=[], quick=False)
    assert got == plan.conv_dtypes == ["float32", "bfloat16", "float16"]
    assert profiled == [got]  # every measured point's kernels then profiled (ConvPoint.kernels_s)
    assert all(shapes == plan.conv_shapes_for(dtype) and budget == pytest.approx(plan.point_budget_s) and keyed for dtype, shapes, _, budget, keyed in calls)
    # the half-precision-only shapes (output channels off the 64-channel tile) in half precision only
    half = set(refresh_mod.conv.GPU_HALF_SHAPES)
    assert half and all(half <= set(shapes) for dtype, shapes, *_ in calls if dtype != "float32")
    assert not half & set(next(shapes for dtype, shapes, *_ in calls if dtype == "float32"))
    assert set(refresh_mod.conv.channel_shapes()) <= set(plan.conv_shapes)
    assert refresh_mod.STAGES["conv"].seconds_key == "gpu conv"  # calibration's stage_seconds key for the stage


def test_the_conv3d_stage_replaces_only_the_3d_points():
    """``--stage conv3d`` measures calibration's 3-d shapes and swaps them into each dense
    convolution curve of its dtype; the 2-d, 1-d and transposed points stay as they were."""
    profile = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    old = profile.gpu.measurements.conv
    fresh = [c.model_copy(update=dict(points=[p.model_copy(update=dict(batch=p.batch + 1)) for p in c.points if p.dims == 3][:2]))
             for c in old[:1]]
    merged = refresh_mod.merge_3d_points(old, fresh)
    assert [p for p in merged[0].points if p.dims != 3] == [p for p in old[0].points if p.dims != 3]
    assert [p for p in merged[0].points if p.dims == 3] == fresh[0].points
    assert merged[1:] == old[1:]
    assert refresh_mod.STAGES["conv3d"].seconds_key == "gpu conv 3d"
    assert set(refresh_mod.conv.GPU_3D_SHAPES) <= set(refresh_mod.gpu_plan(False, 80 << 30).conv_shapes)


def test_the_conv3d_stage_refuses_a_profile_without_keyed_curves():
    """3-d points in a curve that is not keyed would mix into its 2-d points of the same taps."""
    profile = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    old = [c.model_copy(update=dict(keyed=False)) for c in profile.gpu.measurements.conv]
    with pytest.raises(refresh_mod.ProfileError, match="keyed"):
        refresh_mod.merge_3d_points(old, profile.gpu.measurements.conv[:1])


def test_the_conv_patches_stage_adds_the_patch_embeddings_and_keeps_the_rest():
    """``--stage conv_patches`` measures calibration's patch embeddings (ViT-Base's 16x16 and 32x32)
    and puts them beside each dense convolution curve's other points, the 16x16 ones of 256 channels
    among them; measuring again replaces them rather than adding a second copy."""
    from roofline.schema.profile import ConvPoint

    profile = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    old = profile.gpu.measurements.conv
    shapes = refresh_mod.conv.GPU_PATCH_SHAPES
    stat = Stat(median_s=1e-4, iqr_s=1e-6, samples=5)
    fresh = [old[0].model_copy(update=dict(points=[ConvPoint(**s._asdict(), time=stat, flop_per_s=ConvPoint.model_construct(**s._asdict()).flops / stat.median_s)
                                                   for s in shapes]))]
    others = [p for p in old[0].points if not refresh_mod.conv.is_patch_point(p)]
    assert len(others) == len(old[0].points) - len(shapes)  # the shipped profile has them
    merged = refresh_mod.merge_patch_points(old, fresh)
    assert merged[0].points == others + fresh[0].points and merged[1:] == old[1:]
    assert any(p.kernel == 16 and p.out_channels == 256 for p in merged[0].points)  # the narrower patch points stay
    again = refresh_mod.merge_patch_points(merged, fresh)
    assert again[0].points == merged[0].points
    assert set(shapes) <= set(refresh_mod.gpu_plan(False, 80 << 30).conv_shapes)
    assert refresh_mod.STAGES["conv_patches"].seconds_key == "gpu conv patches"
