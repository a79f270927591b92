"""A dtype's GEMM cube derived from its twin's (calibrate.matmul.twin_curve) and the CPU plan beside a GPU."""

import pytest

from calibrate import matmul
from calibrate.runner import CPU_HALF_GRID_BESIDE_GPU, cpu_plan, gpu_plan
from roofline.schema.profile import MatmulCurve, MatmulPoint, Stat

GRID = [1, 64, 256, 1024, 4096, 8192]


def point(m, n, k, t):
    return MatmulPoint(m=m, n=n, k=k, time=Stat(median_s=t, iqr_s=0.1 * t, samples=5), flop_per_s=2 * m * n * k / t)


def twin() -> MatmulCurve:
    return MatmulCurve(dtype="bfloat16", grid=GRID, points=[point(m, n, k, 1e-6 * (1 + m * n * k / 1e8)) for m in GRID for n in GRID for k in GRID])


def measured_as(ratio_of):
    """measure_point answering the twin's time times ratio_of(shape)."""
    theirs = {(p.m, p.n, p.k): p.time.median_s for p in twin().points}
    return lambda m, n, k, *a, **kw: point(m, n, k, theirs[(m, n, k)] * ratio_of((m, n, k)))


def test_a_twin_that_runs_alike_gives_its_cube_scaled_with_the_checks_kept(monkeypatch):
    odd = (4096, 1, 1)  # a degenerate product on a kernel of its own: kept as measured
    monkeypatch.setattr(matmul, "measure_point", measured_as(lambda s: 0.66 if s == odd else 1.02))
    curve = matmul.twin_curve("float16", twin(), "cuda", budget_s=0.01, warnings=[])
    assert curve is not None and curve.derived_from == "bfloat16" and curve.derived_ratio == pytest.approx(1.02)
    assert len(curve.check_points) == len(matmul.TWIN_CHECKS)
    theirs = {(p.m, p.n, p.k): p.time.median_s for p in twin().points}
    mine = {(p.m, p.n, p.k): p for p in curve.points}
    assert mine[odd].time.median_s == pytest.approx(0.66 * theirs[odd])
    assert mine[(64, 256, 1)].time.median_s == pytest.approx(1.02 * theirs[(64, 256, 1)])
    p = mine[(64, 256, 1)]
    assert p.flop_per_s == pytest.approx(2 * 64 * 256 / p.time.median_s)  # the point stays consistent
    MatmulCurve.model_validate(curve.model_dump())  # a full cube, as the schema asks


@pytest.mark.parametrize("ratio_of", [lambda s: 1.5, lambda s: 0.8 if matmul.TWIN_CHECKS.index(s) % 2 else 1.25])
def test_a_twin_that_runs_otherwise_is_not_used(monkeypatch, ratio_of):
    # a median ratio beyond the tolerance, or too few checks agreeing with it: the cube is measured
    monkeypatch.setattr(matmul, "measure_point", measured_as(ratio_of))
    assert matmul.twin_curve("float16", twin(), "cuda", budget_s=0.01, warnings=[]) is None


def test_plans():
    assert gpu_plan(False, 80 << 30).matmul_twins == {"float16": "bfloat16"}

    class Ident:
        isa = ["avx512_bf16"]
        l3_cache_bytes, memory_bytes = 32 << 20, 64 << 30

    alone, beside = cpu_plan(Ident, False), cpu_plan(Ident, False, beside_gpu=True)
    assert alone.grid_for("bfloat16") == alone.matmul_grid == beside.grid_for("float32")
    assert beside.grid_for("bfloat16") == CPU_HALF_GRID_BESIDE_GPU and len(CPU_HALF_GRID_BESIDE_GPU) < len(alone.matmul_grid)
    assert beside.steps(False) < alone.steps(False)



def test_a_derived_cube_follows_its_twins_remeasured_points(monkeypatch):
    from pathlib import Path

    from calibrate import runner
    from roofline.profile_checks import Problem
    from roofline.profiles import load_profile_file

    meas = load_profile_file(Path(__file__).parent / "fixtures" / "h100_profile.json").gpu.measurements
    bf16 = meas.matmul_curve("bfloat16")
    shape = (bf16.grid[1],) * 3
    fp16 = matmul.derived(bf16, "float16", 1.1, [])
    meas = meas.model_copy(update=dict(matmul=[fp16 if c.dtype == "float16" else c for c in meas.matmul]))
    monkeypatch.setattr(matmul, "measure_point", lambda m, n, k, *a, **kw: point(m, n, k, 1e-7))
    problem = Problem(check="monotone", part="gpu", stage="matmul bfloat16", detail="", points=(shape,))
    fixed = runner._remeasure(problem, meas, "cuda", runner.gpu_plan(False, 80 << 30), [])
    at = lambda curve: next(p.time.median_s for p in curve.points if (p.m, p.n, p.k) == shape)  # noqa: E731
    assert at(fixed.matmul_curve("bfloat16")) == pytest.approx(1e-7)
    assert at(fixed.matmul_curve("float16")) == pytest.approx(1.1e-7)
