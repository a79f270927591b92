"""``python -m calibrate.refresh``: one GPU stage measured again and put into a profile, the rest as it was."""

import pytest
import torch

import calibrate.refresh as refresh_mod
from roofline.profiles import load_profile_file, save_profile
from roofline.schema.profile import GemmRatioCurve, GemmRatioPoint, Stat
from tests.conftest import REPO

H100 = REPO / "tests" / "fixtures" / "h100_profile.json"


def test_refresh_replaces_only_its_stage_and_says_when(monkeypatch, tmp_path):
    stat = Stat(median_s=2e-5, iqr_s=1e-7, samples=9)
    curve = GemmRatioCurve(kind="addmm", dtype="float32", points=[GemmRatioPoint(m=64, n=768, k=1024, time=stat, reference=stat)])
    seen = {}

    def fake(device, *, budget_s, warnings):
        seen.update(device=device, budget_s=budget_s)
        warnings.append("one noisy point")
        return [curve]

    monkeypatch.setitem(refresh_mod.STAGES, "gemm_ratios", ("gemm_ratios", fake, "gpu gemm ratios"))
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: type("P", (), {"total_memory": 80 << 30})())
    before = load_profile_file(H100)
    after, warnings = refresh_mod.refresh(before, "gemm_ratios", "cuda:0")
    assert seen["device"] == "cuda:0" and seen["budget_s"] == pytest.approx(refresh_mod.gpu_plan(False, 80 << 30).point_budget_s / 2)
    assert after.gpu.measurements.gemm_ratios == [curve] and warnings == ["one noisy point"]
    assert after.gpu.measurements.matmul == before.gpu.measurements.matmul
    assert after.gpu.measurements.overheads == before.gpu.measurements.overheads
    assert after.calibration.refreshed[-1].startswith("gemm_ratios ") and "gpu gemm ratios" in after.calibration.stage_seconds
    assert before.gpu.measurements.gemm_ratios != [curve]  # the profile given is left as it was
    # written over the file in its own layout, and read back
    path = tmp_path / "p.json"
    path.write_text(H100.read_text())
    save_profile(after, path, keep_layout=True)
    assert path.read_text().splitlines()[1].startswith(H100.read_text().splitlines()[1][:2])
    assert load_profile_file(path).calibration.refreshed == after.calibration.refreshed


@pytest.mark.skipif(torch.cuda.is_available(), reason="the profile's GPU is absent only on a CPU-only machine")
def test_refresh_refuses_a_machine_without_the_profiles_gpu():
    with pytest.raises(SystemExit, match="refresh it on that machine"):
        refresh_mod.gpu_of(load_profile_file(H100))
