"""The accuracy zoo: its registry covers the kinds of model it promises, and a record made by
merging shards is priced again by ``--replay`` to the figures it printed (the check that a recorded
GPU run still holds, made on a machine without a GPU)."""

import json

import pytest
import torch
from torch import nn

from benchmarks.zoo import run
from benchmarks.zoo.registry import MODELS, cases
from roofline.graph.serialize import graph_to_dict
from roofline.pipeline import Analysis, Options
from tests.conftest import REPO

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"


def test_registry_covers_libraries_families_batches_and_dtypes():
    assert len(MODELS) >= 40
    libraries = {m.library for m in MODELS}
    assert {"torchvision", "timm", "transformers", "torch"} <= libraries
    assert sum(m.library != "torch" for m in MODELS) >= 30
    families = {m.family for m in MODELS}
    assert {"cnn", "vit", "encoder", "decoder", "encdec", "rnn"} <= families
    names = " ".join(m.name for m in MODELS)
    for kind in ("resnet", "mobilenet", "efficientnet", "convnext", "regnet", "unet", "vit", "swin", "deit",
                 "bert", "roberta", "distilbert", "gpt2", "llama", "opt", "t5", "whisper", "lstm"):
        assert kind in names, kind
    every = cases(available_only=False)
    labels = [c.label for c in every]
    assert len(labels) == len(set(labels))
    for m in MODELS:
        mine = [c for c in every if c.model is m]
        assert {c.batch for c in mine} >= {1} and len({c.batch for c in mine}) >= 2, m.name
        assert {c.dtype for c in mine} == set(m.dtypes), m.name


def test_the_held_out_zoo_shares_no_model_with_the_zoo():
    from benchmarks.zoo.heldout import HELDOUT, heldout_cases

    assert not {m.name for m in MODELS} & {m.name for m in HELDOUT}
    assert {"torchvision", "timm", "transformers"} <= {m.library for m in HELDOUT}
    held = heldout_cases(available_only=False)
    assert len(held) == 3 * len(HELDOUT) and len({c.label for c in held}) == len(held)


def test_the_third_fourth_and_fifth_sets_share_no_model_with_the_others():
    from benchmarks.zoo.heldout import FIFTH, FOURTH, FRESH, HELDOUT

    names = [m.name for models in (MODELS, HELDOUT, FRESH, FOURTH, FIFTH) for m in models]
    assert len(names) == len(set(names))
    for models in (FOURTH, FIFTH):
        assert {"torchvision", "timm", "transformers"} <= {m.library for m in models}


def test_summary_line_is_median_p90_and_max_of_the_absolute_errors():
    assert run._line("zoo", [0.25, -0.2, 0.1]) == "zoo: n=3 median=20.0% p90=24.0% max=25.0%"
    assert run._line("zoo", []) == "zoo: n=0"


def _shard(tmp_path):
    """A shard of two cases as a live run writes it, measured at 0.8x and 1.25x the prediction."""
    models = {
        "mlp b4 fp32": (nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64)), (torch.randn(4, 64),)),
        "cnn b2 fp32": (nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1)), (torch.randn(2, 3, 32, 32),)),
    }
    rows, graphs = [], {}
    for (label, (model, args)), ratio in zip(models.items(), (0.8, 1.25)):
        analysis = Analysis.of(model.eval(), args, None, str(PROFILE), Options(device="cuda", batch_sweep=False, capture_device="cpu"), name=label)
        predicted = analysis.total_s
        rows.append(dict(label=label, model=label.split()[0], library="torch", family="mlp", batch=1, dtype="float32",
                         predicted_s=predicted, measured_s=predicted / ratio, host_scale=2.0,
                         predicted_now_s=analysis.at_host_scale(2.0).total_s, host_read_scale=0.5,
                         predicted_read_s=analysis.at_host_scale(0.5).total_s, n_ops=len(analysis.graph.ops), notes=[],
                         ops=run.priced_ops(analysis, [None] * len(analysis.graph.ops))))
        graphs[label] = graph_to_dict(analysis.graph)
    shard = dict(device="NVIDIA H100 80GB HBM3", kind="cuda", profile="h100", torch=torch.__version__, date="2026-11-23",
                 allow_tf32=False, conv_tf32=True, rows=rows, graphs=graphs, summary=run.summary_lines(rows))
    path = tmp_path / "zoo_1.json.gz"
    run._write(str(path), shard)
    return path


def test_merge_then_replay_prints_the_recorded_figures(tmp_path, capsys):
    record = tmp_path / "rec.json"
    assert run.main(["--zoo", "--merge", str(_shard(tmp_path)), "--json", str(record), "--profile-file", str(PROFILE)]) == 0
    recorded = json.loads(record.read_text())
    assert recorded["summary"][0] == "zoo: n=2 median=22.5% p90=24.5% max=25.0%"
    assert (tmp_path / "rec_graphs.json.gz").exists() and (tmp_path / "rec_profile.json.gz").exists()
    capsys.readouterr()
    assert run.main(["--zoo", "--replay", str(record)]) == 0
    out = capsys.readouterr().out
    assert "zoo: n=2 median=22.5% p90=24.5% max=25.0%" in out
    assert recorded["summary"][1] in out and "recorded run printed" not in out
    # the prediction with the host read before predicting, priced again from the recorded reading
    assert recorded["summary"][2].startswith("zoo with the host read before predicting: n=2 ") and recorded["summary"][2] in out
    assert recorded["summary"][2].split(": ", 1)[1] != recorded["summary"][1].split(": ", 1)[1]


def test_replay_at_other_program_factors_moves_the_host_bound_figures(tmp_path, capsys):
    from roofline.model.host import CALL_ENTRY_SHARE, PYTHON_CALL_SHARE

    record = tmp_path / "rec.json"
    run.main(["--zoo", "--merge", str(_shard(tmp_path)), "--json", str(record), "--profile-file", str(PROFILE)])
    capsys.readouterr()
    run.main(["--zoo", "--replay", str(record), "--host-factors", "1.0", "2.0"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"program factor 1.00, Python call share {PYTHON_CALL_SHARE:.2f}, call entry share {CALL_ENTRY_SHARE:.2f}: zoo: n=2 ")
    # two tiny models at batch 1-4 are host-bound: twice the host cost is a different figure
    assert lines[0].split("|")[0].split(": ", 1)[1] != lines[1].split("|")[0].split(": ", 1)[1]


def test_the_program_factor_fit_finds_the_factor_the_runs_ran_at(tmp_path, capsys):
    import benchmarks.program_factor as fit
    from roofline.profiles import load_profile_file

    record = tmp_path / "rec.json"
    run.main(["--zoo", "--merge", str(_shard(tmp_path)), "--json", str(record), "--profile-file", str(PROFILE)])
    # measurements as this code prices the runs at the host scale with a program factor of 1.5
    data, profile, kind, graphs, _, calls = run.replay_inputs(record)
    at = run.with_host_model(profile, kind, program_factor=1.5)
    options = Options(device=kind, allow_tf32=False, conv_tf32=True, batch_sweep=False)
    data["rows"] = [dict(old, measured_s=run._replayed(old, graphs, at, kind, options, {}, calls)[0]["predicted_now_s"]) for old in data["rows"]]
    record.write_text(json.dumps(data))
    mine = tmp_path / "mine.json"
    mine.write_text(PROFILE.read_text())
    capsys.readouterr()
    assert fit.main([str(mine), str(record), "--factors", "1.2", "1.5", "1.8", "--write"]) == 0
    out = capsys.readouterr().out
    assert "best: 1.50 (mean of the records' medians 0.0%)" in out
    fit_stored = load_profile_file(mine).gpu.measurements.overheads.program_fit
    assert fit_stored.factor == 1.5 and fit_stored.records == ["rec.json"]
    assert Analysis.of(nn.Linear(64, 64), (torch.randn(4, 64),), None, str(mine), Options(device="cuda", batch_sweep=False, capture_device="cpu")).dev.program_factor == 1.5


def test_the_program_factor_fit_refuses_records_it_cannot_weigh(tmp_path, capsys):
    import benchmarks.program_factor as fit

    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps(dict(kind="cpu", graphs_file="g.json.gz", profile_file="p.json", rows=[])))
    unscaled = tmp_path / "unscaled.json"
    unscaled.write_text(json.dumps(dict(kind="cuda", graphs_file="g.json.gz", rows=[])))
    for record, why in ((cpu, "not a GPU zoo record"), (unscaled, "names no profile file"), (tmp_path / "none.json", "cannot read the record")):
        with pytest.raises(SystemExit, match=why):
            fit.main([str(PROFILE), str(record)])


def test_a_record_priced_without_a_calibration_stage():
    from roofline.profiles import load_profile_file

    profile = load_profile_file(PROFILE)
    assert profile.gpu.measurements.attention and any(c.op == "sin" for c in profile.gpu.measurements.pointwise)
    stripped = run.without_stages(profile, "cuda", ["attention", "pointwise:sin"])
    assert stripped.gpu.measurements.attention == [] and not any(c.op == "sin" for c in stripped.gpu.measurements.pointwise)
    assert profile.gpu.measurements.attention  # the profile itself is left as it was
    with pytest.raises(SystemExit, match="not an optional measurement"):
        run.without_stages(profile, "cuda", ["matmul"])


def test_recapture_prices_the_cases_captured_again_here(tmp_path, capsys):
    # A record whose einsum probe was captured before torch's Python functions were numbered (every op
    # its own call): --replay prices the recorded graph, --recapture the case captured with this code,
    # whose ops share one call and pay one Python entry; a label the registry lacks is left out, said so.
    from benchmarks.zoo.probes import PROBES

    probe = next(m for m in PROBES if m.name == "probe_einsum")
    with torch.device("meta"):
        model, args, _ = probe.build(1, torch.float32)
    analysis = Analysis.of(model, args, None, str(PROFILE), Options(device="cuda", batch_sweep=False, capture_device="cpu"))
    old = analysis.graph
    assert len({op.torch_call for op in old.ops}) == 16  # one einsum call per repetition
    for op in old.ops:
        op.torch_call = None
    rows, graphs = [], {}
    for label in ("probe_einsum b1 fp32", "not_a_model b1 fp32"):
        rows.append(dict(label=label, model=label.split()[0], library="probe", family="other", batch=1, dtype="float32",
                         predicted_s=1e-3, measured_s=1e-3, host_scale=1.0, predicted_now_s=1e-3, n_ops=len(old.ops), notes=[], ops=[]))
        graphs[label] = graph_to_dict(old)
    shard = dict(device="NVIDIA H100 80GB HBM3", kind="cuda", profile="h100", torch=torch.__version__, date="2026-11-25",
                 allow_tf32=False, conv_tf32=True, rows=rows, graphs=graphs, summary=run.summary_lines(rows))
    run._write(str(tmp_path / "zoo_1.json.gz"), shard)
    record = tmp_path / "rec.json"
    run.main(["--zoo", "--merge", str(tmp_path / "zoo_1.json.gz"), "--json", str(record), "--profile-file", str(PROFILE)])
    capsys.readouterr()

    def einsum_error(*extra):
        run.main(["--zoo", "--replay", str(record), "--host-factors", "1.0", "--verbose", *extra])
        out = capsys.readouterr().out
        line = next(x for x in out.splitlines() if x.strip().startswith("probe_einsum"))
        return float(line.rsplit(":", 1)[1].strip().rstrip("%")), out

    recorded, _ = einsum_error()
    again, out = einsum_error("--recapture")
    assert again < recorded - 5  # the twelve ops of each call pay one entry, not twelve
    assert "not_a_model b1 fp32: left out (not in the registry)" in out


def test_a_replay_with_another_profile_reads_the_host_scales_against_it(tmp_path, capsys):
    from roofline.model.host import moved_host_costs
    from roofline.profiles import load_profile_file, save_profile

    record = tmp_path / "rec.json"
    run.main(["--zoo", "--merge", str(_shard(tmp_path)), "--json", str(record), "--profile-file", str(PROFILE)])
    profile = load_profile_file(PROFILE)
    halved = profile.model_copy(update=dict(gpu=profile.gpu.model_copy(update=dict(
        measurements=profile.gpu.measurements.model_copy(update=dict(overheads=moved_host_costs(profile.gpu.measurements.overheads, 0.5)))))))
    rows = json.loads(record.read_text())["rows"]
    rebased = run.rebased_host_scales(rows, profile, halved, "cuda")
    assert [r["host_scale"] for r in rebased] == pytest.approx([2 * r["host_scale"] for r in rows])
    assert [r["host_read_scale"] for r in rebased] == pytest.approx([2 * r["host_read_scale"] for r in rows])
    # the same host speed: the prediction at the host scale does not move with the profile's host level
    save_profile(halved, tmp_path / "halved.json")
    lines = {}
    for name, path in (("recorded", PROFILE), ("halved", tmp_path / "halved.json")):
        capsys.readouterr()
        run.main(["--zoo", "--replay", str(record), "--profile", str(path)])
        lines[name] = capsys.readouterr().out.splitlines()
    assert lines["recorded"][2] == lines["halved"][2] and lines["recorded"][2].startswith("zoo at the host scale")
    assert lines["recorded"][1] != lines["halved"][1]  # as calibrated, the host level moves the tiny models' figures


def test_a_lost_cuda_context_ends_the_live_run_and_nothing_else_does():
    assert run.context_lost(RuntimeError("CUDA error: device-side assert triggered"))
    assert run.context_lost(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not run.context_lost(RuntimeError("Expected inputs of BF16 type"))


def test_a_merged_record_names_the_cases_a_lost_context_left_unrun(tmp_path, capsys):
    shard = _shard(tmp_path)
    data = run._read(str(shard))
    data["not_run"] = ["pegasus b8 fp16"]
    run._write(str(shard), data)
    record = tmp_path / "rec.json"
    assert run.main(["--zoo", "--merge", str(shard), "--json", str(record)]) == 0
    assert json.loads(record.read_text())["not_run"] == ["pegasus b8 fp16"]
    assert "1 cases not run" in capsys.readouterr().out
