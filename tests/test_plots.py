"""Charts of a report (roofline.report.charts) and the `roofline plot` / `advise --plot --report` hooks (roofline.cli.plot).

Reports come from real analyses of tiny models against the recorded H100 profile
(tests/fixtures/h100_profile.json); measured times are filled in by hand where a test needs them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.patches import Rectangle
from torch import nn

from roofline.report import charts as plots
from roofline.pipeline import analyze
from roofline.cli import build_parser
from roofline.cli.advise import emit_outputs
from roofline.cli.paths import check_output_args
from roofline.cli.plot import add_parsers as add_plot_parser
from roofline.cli.plot import load_report, profile_for_report
from roofline.units import si
from roofline.errors import RooflineError
from roofline.profiles import load_profile_file
from roofline.schema.report import BatchPoint, BatchSweep, PlacementPoint, PlacementSweep, Report

FIXTURE = Path(__file__).parent / "fixtures" / "h100_profile.json"


class Block(nn.Module):
    """LayerNorm -> Linear -> GELU -> Linear, residual: GEMMs, a norm, a transcendental, views and an add."""

    def __init__(self, d: int = 64, dtype=torch.float32):
        super().__init__()
        self.ln = nn.LayerNorm(d, dtype=dtype)
        self.fc1 = nn.Linear(d, 4 * d, dtype=dtype)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(4 * d, d, dtype=dtype)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.ln(x))))


class Net(nn.Module):
    def __init__(self, n: int = 3, dtype=torch.float32):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(dtype=dtype) for _ in range(n)])
        self.head = nn.Linear(64, 10, dtype=dtype)

    def forward(self, x):
        return self.head(self.blocks(x))


@pytest.fixture(scope="module")
def profile():
    return load_profile_file(FIXTURE)


@pytest.fixture(scope="module")
def report(profile):
    return analyze(Net().eval(), (torch.randn(8, 32, 64),), profile=profile, name="tiny_net", batch_sweep=False)


@pytest.fixture(scope="module")
def bf16_report(profile):
    return analyze(Net(dtype=torch.bfloat16).eval(), (torch.randn(8, 32, 64, dtype=torch.bfloat16),), profile=profile, name="tiny_bf16", batch_sweep=False)


@pytest.fixture(scope="module")
def cpu_report(profile):
    return analyze(Net().eval(), (torch.randn(8, 32, 64),), profile=profile, device="cpu", name="tiny_cpu", batch_sweep=False)


def with_measurement(report: Report, factor: float = 1.3) -> Report:
    """A copy whose ops with kernels are 'measured' at factor x (and 1/factor x alternately) their kernel time."""
    r = report.model_copy(deep=True)
    for k, op in enumerate(r.ops):
        if op.kernels:
            pred = op.kernel_s if r.profile.kind == "cuda" else op.predicted_s
            op.measured_s = pred * (factor if k % 2 else 1 / factor)
            op.error = (pred - op.measured_s) / op.measured_s
    r.total.measured_s = r.total.predicted_s * 1.1
    return r


def with_sweeps(report: Report) -> Report:
    r = report.model_copy(deep=True)
    pts = []
    for b, reg in ((1, "overhead"), (2, "overhead"), (4, "memory"), (8, "compute"), (16, "compute")):
        t = 100e-6 + b * 20e-6
        pts.append(BatchPoint(batch=b, predicted_s=t, per_sample_s=t / b, regime=reg, regime_s={reg: t}, measured_s=t * 1.1 if b < 8 else None))
    r.batch_sweep = BatchSweep(device="cuda", points=pts, leaves_overhead_at=4, compute_bound_at=8, doubling_ratio=1.2)
    ppts = []
    for n in (16, 64, 256, 1024, 4096):
        cpu, gpu, tr = 2e-6 * (n / 16) ** 2.2, 30e-6 + 1e-9 * n**2, 40e-6 + 4e-9 * n * n / 8
        ppts.append(PlacementPoint(size=n, label=f"dim={n}", cpu_s=cpu, gpu_s=gpu, transfer_s=tr, recommended="cuda" if gpu + tr < cpu else "cpu",
                                   measured_cpu_s=cpu * 0.9, measured_gpu_total_s=(gpu + tr) * 1.2))
    r.placement_sweep = PlacementSweep(parameter="dim", points=ppts, crossover=1024, measured_crossover=1024)
    return r


def check_png(path: Path) -> None:
    assert path.exists(), path
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000, f"{path} is only {len(data)} bytes"


def texts(fig) -> list[str]:
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts] + [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        out += [ax.get_xlabel(), ax.get_ylabel()]
        leg = ax.get_legend()
        if leg:
            out += [t.get_text() for t in leg.get_texts()]
    for leg in fig.legends:
        out += [t.get_text() for t in leg.get_texts()]
    if fig._suptitle is not None:
        out.append(fig._suptitle.get_text())
    return out


def offsets(ax) -> np.ndarray:
    pts = [c.get_offsets() for c in ax.collections if isinstance(c, PathCollection)]
    return np.concatenate(pts) if pts else np.empty((0, 2))


def has_point(ax, x: float, y: float) -> bool:
    o = offsets(ax)
    return bool(np.any(np.isclose(o[:, 0], x, rtol=1e-6) & np.isclose(o[:, 1], y, rtol=1e-6)))


# ---- roofline chart ----------------------------------------------------------------------------


def test_roofline_chart_gpu(report, profile, tmp_path):
    fig = plots.roofline_chart(report, profile)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "FLOP/byte" in ax.get_xlabel() or "FLOP per byte" in ax.get_xlabel()
    assert "FLOP/s" in ax.get_ylabel()
    all_text = "\n".join(texts(fig))
    # Title names the model, the profile and the dtype.
    assert "tiny_net" in all_text and profile.name in all_text and "float32" in all_text
    # Ceilings: the float32 matmul peak, the vector ceiling, the DRAM roof, labelled with their values; ridges labelled.
    fp32_peak = profile.gpu.measurements.matmul_curve("float32").peak_flop_per_s
    assert f"float32 matmul peak {si(fp32_peak, 'FLOP/s')}" in all_text
    assert "non-matmul" in all_text
    cache = profile.gpu.identity.l2_cache_bytes
    dram = profile.gpu.measurements.bandwidth_curve("copy").dram_bytes_per_s(cache)
    assert f"DRAM {si(dram, 'B/s')}" in all_text
    assert "ridge" in all_text
    horizontal = [ln for ln in ax.lines if len(ln.get_ydata()) == 2 and np.isclose(ln.get_ydata()[0], fp32_peak) and np.isclose(ln.get_ydata()[1], fp32_peak)]
    assert horizontal, "no horizontal line at the float32 matmul peak"
    # The overhead cap is drawn and explained; the zero-FLOP ops are counted in a note.
    assert "overhead cap" in all_text
    zero = sum(1 for op in report.ops if op.flops == 0)
    assert zero > 0 and f"{zero} ops with zero FLOPs" in all_text
    # Every op with FLOPs is a point at (FLOP/byte, FLOPs / kernel time).
    assert ax.get_legend() is not None
    for op in report.ops:
        nbytes = op.bytes_read + op.bytes_written
        if op.flops and nbytes and op.kernel_s:
            assert has_point(ax, op.flops / nbytes, op.flops / op.kernel_s), op.target
    # Labels of the top ops: at least the GEMMs.
    assert "addmm" in all_text
    path = plots.save(fig, tmp_path / "roofline.png")
    check_png(path)


def test_roofline_chart_bf16_and_cpu(bf16_report, cpu_report, profile, tmp_path):
    fig = plots.roofline_chart(bf16_report, profile)
    all_text = "\n".join(texts(fig))
    assert "bfloat16 matmul peak" in all_text and "bfloat16" in fig.axes[0].get_title(loc="left")
    assert "float32 matmul peak" not in all_text  # only the dtypes the model uses
    check_png(plots.save(fig, tmp_path / "bf16.png"))

    fig = plots.roofline_chart(cpu_report, profile)
    ax = fig.axes[0]
    all_text = "\n".join(texts(fig))
    assert "(CPU)" in all_text and "per-op overhead" in all_text
    cpu_peak = profile.host.measurements.matmul_curve("float32").peak_flop_per_s
    assert si(cpu_peak, "FLOP/s") in all_text
    for op in cpu_report.ops:  # on the CPU the rate is over the whole predicted time
        nbytes = op.bytes_read + op.bytes_written
        if op.flops and nbytes and op.predicted_s:
            assert has_point(ax, op.flops / nbytes, op.flops / op.predicted_s), op.target
    check_png(plots.save(fig, tmp_path / "cpu.png"))


def test_roofline_chart_measured_points(report, profile, tmp_path):
    m = with_measurement(report)
    fig = plots.roofline_chart(m, profile)
    ax = fig.axes[0]
    hollow = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_facecolors()) == 0]
    assert hollow, "no hollow (measured) markers"
    op = next(o for o in m.ops if o.category == "matmul")
    assert has_point(ax, op.flops / (op.bytes_read + op.bytes_written), op.flops / op.measured_s)
    assert any("measured" in t for t in texts(fig))
    check_png(plots.save(fig, tmp_path / "measured.png"))


def test_roofline_chart_identical_ops_share_a_label(report, profile):
    fig = plots.roofline_chart(report, profile)
    # Three blocks: each GEMM shape appears three times at one spot and is labelled once, with its count.
    assert any("×3" in t for t in texts(fig))


def test_roofline_chart_without_flops(profile, tmp_path):
    r = analyze(lambda x: x.transpose(0, 1).contiguous(), (torch.randn(64, 64),), profile=profile, name="copy_only", batch_sweep=False)
    assert all(op.flops == 0 for op in r.ops)
    fig = plots.roofline_chart(r, profile)
    assert any("zero FLOPs" in t for t in texts(fig))
    check_png(plots.save(fig, tmp_path / "none.png"))


def test_gpu_report_needs_gpu_profile(report, profile):
    cpu_only = profile.model_copy(deep=True)
    cpu_only.gpu = None
    with pytest.raises(RooflineError, match="no GPU part"):
        plots.roofline_chart(report, cpu_only)


# ---- the other charts --------------------------------------------------------------------------


def test_predicted_vs_measured(report, tmp_path):
    with pytest.raises(ValueError, match="--measure"):
        plots.predicted_vs_measured(report)
    m = with_measurement(report)
    fig = plots.predicted_vs_measured(m)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert any(isinstance(c, PolyCollection) for c in ax.collections), "no ±25% band"
    diag = [ln for ln in ax.lines if np.allclose(ln.get_xdata(), ln.get_ydata())]
    assert diag, "no y = x line"
    all_text = "\n".join(texts(fig))
    assert "±25%" in all_text and "median |error|" in all_text and "whole forward" in all_text
    op = next(o for o in m.ops if o.measured_s)
    assert has_point(ax, op.measured_s, op.kernel_s)
    check_png(plots.save(fig, tmp_path / "pvm.png"))
    acc = plots.accuracy(m, min_s=0.0)
    assert acc["max_abs_error"] == pytest.approx(0.3, rel=1e-6)  # factor 1.3 or 1/1.3: |error| 0.3 or 0.23
    assert acc["total_error"] == pytest.approx(-0.1 / 1.1)


def test_time_by_module(report, tmp_path):
    fig = plots.time_by_module(report)
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert bars and ax.get_legend() is not None
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert any(lbl.startswith("blocks.0") for lbl in labels)
    check_png(plots.save(fig, tmp_path / "modules.png"))
    fig = plots.time_by_module(report, top=2)
    assert any(t.get_text().startswith("other (") for t in fig.axes[0].get_yticklabels())


def test_batch_and_placement_charts(report, tmp_path):
    with pytest.raises(ValueError, match="batch sweep"):
        plots.batch_chart(report)
    with pytest.raises(ValueError, match="placement sweep"):
        plots.placement_chart(report)
    r = with_sweeps(report)
    fig = plots.batch_chart(r)
    all_text = "\n".join(texts(fig))
    assert "leaves overhead at batch 4" in all_text and "compute-bound from batch 8" in all_text
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and "per sample" in ax.get_ylabel()
    check_png(plots.save(fig, tmp_path / "batch.png"))
    fig = plots.placement_chart(r)
    all_text = "\n".join(texts(fig))
    assert "GPU wins from dim=1024" in all_text and "CPU" in all_text and "GPU + copies in and out" in all_text
    check_png(plots.save(fig, tmp_path / "placement.png"))


def test_placement_chart_repeated_sizes(report, tmp_path):
    r = with_sweeps(report)
    for p, b in zip(r.placement_sweep.points, (1, 8, 1, 8, 1)):
        p.label = f"dim={p.size},batch={b}"
    r.placement_sweep.points[1].size = r.placement_sweep.points[0].size
    fig = plots.placement_chart(r)
    assert any("batch=8" in t.get_text() for t in fig.axes[0].get_xticklabels())
    check_png(plots.save(fig, tmp_path / "placement2.png"))


# ---- saving, plot_all, no global state ---------------------------------------------------------


def test_save_formats_and_errors(report, profile, tmp_path):
    fig = plots.time_by_module(report)
    svg = plots.save(fig, tmp_path / "sub" / "m.svg")
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    with pytest.raises(RooflineError, match=r"\.png or \.svg"):
        plots.save(fig, tmp_path / "m.pdf")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RooflineError, match="cannot write"):
        plots.save(fig, blocker / "m.png")


def test_plot_all_paths(report, profile, tmp_path):
    r = with_sweeps(with_measurement(report))
    written = plots.plot_all(r, profile, tmp_path / "out.png")
    names = sorted(p.name for p in written)
    assert names == sorted(["out.png", "out_timeline.png", "out_vs_measured.png", "out_modules.png", "out_batch.png", "out_placement.png"])
    for p in written:
        check_png(p)
    d = tmp_path / "charts"
    d.mkdir()
    written = plots.plot_all(report, profile, d)
    assert sorted(p.name for p in written) == ["tiny_net_modules.png", "tiny_net_roofline.png", "tiny_net_timeline.png"]
    written = plots.plot_all(report, profile, tmp_path / "stem")
    assert sorted(p.name for p in written) == ["stem_modules.png", "stem_roofline.png", "stem_timeline.png"]


def test_no_global_state_leak(report, profile):
    from matplotlib import _pylab_helpers

    before = dict(matplotlib.rcParams)
    backend = matplotlib.get_backend()
    managers = _pylab_helpers.Gcf.get_num_fig_managers()
    plots.roofline_chart(report, profile)
    plots.time_by_module(report)
    assert dict(matplotlib.rcParams) == before
    assert matplotlib.get_backend() == backend
    assert _pylab_helpers.Gcf.get_num_fig_managers() == managers


def test_si_and_short_names():
    assert si(2.97e12, "B/s") == "2.97 TB/s"
    assert si(1.03e-5, "s") == "10.3 µs"
    assert si(0.99984e-6, "s") == "1 µs"
    assert plots.short_target("aten.addmm.default") == "addmm"
    assert plots.short_target("aten._scaled_dot_product_flash_attention_for_cpu.default") == "sdpa flash"
    assert plots.short_target("aten.native_layer_norm.default") == "layer_norm"
    assert plots.short_target("aten.add.Tensor") == "add.Tensor"


# ---- CLI hooks ---------------------------------------------------------------------------------


def run_plot(*argv) -> int:
    parser = argparse.ArgumentParser(prog="roofline")
    sub = parser.add_subparsers(dest="command", required=True)
    add_plot_parser(sub)
    args = parser.parse_args(["plot", *map(str, argv)])
    return args.func(args)


def test_cli_plot(report, tmp_path, capsys):
    src = tmp_path / "r.json"
    report.write_json(src)
    assert run_plot(src, "--profile", FIXTURE, "--output", tmp_path / "p.svg") == 0
    assert (tmp_path / "p.svg").exists() and (tmp_path / "p_modules.svg").exists()
    assert "wrote" in capsys.readouterr().out
    assert run_plot(src, "--profile", FIXTURE, "--output", tmp_path / "only.png", "--chart", "modules") == 0
    check_png(tmp_path / "only.png")
    assert run_plot(src, "--profile", FIXTURE, "--output", tmp_path / "page.html") == 0
    assert (tmp_path / "page.html").read_text().startswith("<!DOCTYPE html>")
    with pytest.raises(RooflineError, match="no data for the batch chart"):
        run_plot(src, "--profile", FIXTURE, "--output", tmp_path / "b.png", "--chart", "batch")


def test_cli_plot_finds_profile_from_report(report, tmp_path):
    r = report.model_copy(deep=True)
    r.profile.source = str(FIXTURE)
    src = tmp_path / "r.json"
    r.write_json(src)
    loaded = load_report(src)
    assert profile_for_report(loaded).name == r.profile.name
    r.profile.source = str(tmp_path / "gone.json")
    r.profile.name = "no-such-profile-anywhere"
    r.write_json(src)
    with pytest.raises(RooflineError, match="pass --profile"):
        profile_for_report(load_report(src))
    assert run_plot(src, "--profile", FIXTURE, "--output", tmp_path / "x.png") == 0


def test_cli_plot_errors(tmp_path, report):
    with pytest.raises(RooflineError, match="does not exist"):
        load_report(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(RooflineError, match="not a roofline report"):
        load_report(bad)
    bad.write_text('{"a": 1}')
    with pytest.raises(RooflineError, match="not a roofline report"):
        load_report(bad)
    with pytest.raises(RooflineError, match="device profile, not a report"):
        load_report(FIXTURE)
    src = tmp_path / "r.json"
    report.write_json(src)
    with pytest.raises(RooflineError, match=r"\.png or \.svg"):
        run_plot(src, "--profile", FIXTURE, "--output", tmp_path / "x.pdf")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RooflineError, match="cannot write"):
        run_plot(src, "--profile", FIXTURE, "--output", blocker / "x.png")


def test_advise_output_args(report, profile, tmp_path, capsys):
    parser = build_parser()

    def advise(*argv):
        return parser.parse_args(["advise", "model.py", *argv])

    args = advise("--plot", str(tmp_path / "c.png"), "--report", str(tmp_path / "r.html"))
    check_output_args(args)
    written = emit_outputs(report, profile, args)
    assert {p.name for p in written} == {"c.png", "c_timeline.png", "c_modules.png", "r.html"}
    assert "wrote" in capsys.readouterr().out
    assert emit_outputs(report, profile, advise()) == []
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv, pattern in (
        (["--report", str(tmp_path / "r.txt")], r"\.html"),
        (["--report", str(blocker / "r.html")], "cannot write"),
        (["--plot", str(blocker / "c.png")], "cannot write"),
        (["--plot", str(tmp_path / "c.html")], "--report"),
    ):
        with pytest.raises(RooflineError, match=pattern):
            emit_outputs(report, profile, advise(*argv))


def test_nan_free_accuracy_without_big_ops(report):
    # no op takes a second: no error figure to give, so None (JSON null), never NaN
    m = with_measurement(report)
    acc = plots.accuracy(m, min_s=1.0)
    assert acc["n_ops"] == 0 and acc["n_measured"] > 0
    assert acc["median_abs_error"] is None and acc["max_abs_error"] is None
    json.dumps(acc, allow_nan=False)  # raises on a NaN anywhere in it
