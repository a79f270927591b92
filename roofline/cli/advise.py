"""``roofline advise model.py``: capture, price, predict and advise, optionally check against the
device (``--measure``), and write the report, its charts and its design-review page."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from roofline.cli.paths import check_json_path, check_output_args
from roofline.errors import ModelFileError, RooflineError


# the flags that describe the training step, and their defaults: given without --train, they would be ignored
_TRAIN_DEFAULTS = {"optimizer": "adamw", "optimizer_impl": "default", "loss": "auto"}


def add_parsers(sub) -> None:
    adv = sub.add_parser("advise", help="trace a model file, predict per-op time and regime, and advise")
    adv.add_argument("model_file", help="a .py file defining `model` + `example_inputs`, or `get_model()` + `get_example_inputs()`")
    adv.add_argument("--profile", help="profile name or path (`roofline profiles` lists them); default: the newest saved one")
    adv.add_argument("--device", choices=["cuda", "cpu"], help="which part of the profile to predict for (default: its GPU if it has one)")
    adv.add_argument(
        "--host", choices=["profile", "now"], default="profile",
        help="host speed of the host costs: profile (calibration's) or now (the host-speed index read here first; needs the "
        "profile's device; on a host whose speed flips within seconds it helps little, docs/design.md)",
    )
    adv.add_argument("--json", metavar="PATH", help="write the report as JSON")
    adv.add_argument("--top", type=_positive_int, default=15, help="rows in the top-ops table")
    adv.add_argument("--tf32", action="store_true", help="price float32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32=True)")
    adv.add_argument("--calls", type=_positive_int, default=1, help="placement over a loop of this many calls")
    adv.add_argument("--pinned", action="store_true", help="placement with pinned host memory for the copies")
    adv.add_argument("--measure", action="store_true", help="also run the model on the profile's device and report measured times and errors")
    adv.add_argument(
        "--decode", type=_positive_int, metavar="N",
        help="causal LMs: predict the prompt's prefill plus N decode steps with the key-value cache, per token and in total (with --measure: timed too)",
    )
    adv.add_argument(
        "--bench-kernels", action="store_true",
        help="on the profiled GPU: time each distinct kernel of the model at its exact shapes first, and predict with those times (per op: kernel_source 'table')",
    )
    adv.add_argument("--copies", choices=["per-call", "once"], default="per-call", help="placement: inputs/outputs copied on every call, or once for the whole --calls loop")
    adv.add_argument("--batch-sweep", action=argparse.BooleanOptionalAction, default=None, help="predict time per sample over batch sizes (default: on for models of up to 600 ops)")
    adv.add_argument("--placement-sweep", action="store_true", help="CPU vs GPU over the sizes of the model file's sweep(), with the crossover")
    adv.add_argument(
        "--plot", metavar="PATH",
        help="draw the charts: PATH.png or PATH.svg (the roofline there, the others beside it as PATH_<chart>), or a directory",
    )
    adv.add_argument("--report", metavar="PATH.html", help="write a self-contained HTML design-review page (charts inline, no network needed)")
    adv.add_argument("--trace", metavar="PATH.json", help="write the predicted eager timeline (and, with --measure, the measured kernels) as a Chrome trace for Perfetto")
    adv.add_argument(
        "--train", action="store_true",
        help="analyze one training step: forward, loss, backward and optimizer step, each op with its phase, and memory over the step (with --measure: real steps timed)",
    )
    adv.add_argument("--optimizer", choices=["adamw", "adam", "sgd"], default=_TRAIN_DEFAULTS["optimizer"], help="--train: the optimizer (default adamw)")
    adv.add_argument(
        "--optimizer-impl", choices=["default", "foreach", "fused", "for-loop"], default=_TRAIN_DEFAULTS["optimizer_impl"],
        help="--train: how the optimizer updates its tensors (default: torch's choice for the device: foreach on a GPU, for-loop on the CPU)",
    )
    adv.add_argument(
        "--loss", choices=["auto", "sum"], default=_TRAIN_DEFAULTS["loss"],
        help="--train: the loss when the model file defines no loss_fn(output, *inputs): auto (the output's own .loss, else cross-entropy over a logits-shaped output, else the sum) or sum",
    )
    adv.set_defaults(func=_cmd_advise)


def _cmd_advise(args) -> int:
    from roofline.graph.loading import check_model_path, load_model_file
    from roofline.pipeline import Analysis, Options, resolve_profile
    from roofline.report.terminal import render

    check_model_path(args.model_file)
    if not args.train:
        for name, default in _TRAIN_DEFAULTS.items():
            if getattr(args, name) != default:
                flag = "--" + name.replace("_", "-")
                raise RooflineError(f"{flag} describes the training step, which only --train analyzes; add --train or drop {flag}")
    profile, kind = resolve_profile(args.profile, args.device)  # fail fast on a bad profile
    check_output_args(args)  # and on an unwritable --plot/--report path
    if args.json:
        check_json_path(args.json)
    if args.trace:
        check_json_path(args.trace, "--trace", "the trace")
    measure_device = None
    if args.measure or args.bench_kernels or args.host == "now":
        from roofline.measure.device import device_for

        # refuses a profile of another machine before any work
        device = device_for(profile, kind, "--measure" if args.measure else "--bench-kernels" if args.bench_kernels else "--host now")
        measure_device = device if args.measure or args.bench_kernels else None
    if args.train and args.decode:
        raise RooflineError("--train and --decode analyze different programs (a training step, a decode loop); run them separately")
    loaded = load_model_file(args.model_file, materialize=False)
    options = Options(
        device=kind, allow_tf32=args.tf32 or None, calls=args.calls, host_memory="pinned" if args.pinned else "pageable",
        copies_per_call=args.copies == "per-call", batch_sweep=args.batch_sweep, user_files=(str(loaded.path),),
        train=_train_step(args, loaded), host=args.host,
    )
    analysis = Analysis.of(loaded.model, loaded.args, loaded.kwargs, profile, options, name=loaded.name, materialize=loaded.materializer())
    # the host read once: what follows prices at the analysis's host level
    profile, options = analysis.profile, replace(options, host="profile")
    if args.bench_kernels:
        analysis = _with_benched_kernels(analysis, profile, measure_device, loaded.name)
    report = analysis.report()
    decode = None
    if args.decode:
        from roofline.advice.text import decode_advice
        from roofline.decode import DecodeAnalysis

        decode = DecodeAnalysis.of(loaded.model, loaded.args, loaded.kwargs, profile, options, new_tokens=args.decode, name=loaded.name)
        report.decode = decode.report()
        report.advice.append(decode_advice(report.decode))
    if args.placement_sweep:
        _placement_sweep(report, loaded, profile, options, measure_device)
    report.warnings = list(loaded.warnings) + report.warnings
    if args.measure and args.train:
        _measure_train(report, analysis, args, measure_device)
    elif args.measure:
        _measure(report, analysis, args, measure_device)
        if decode is not None:
            _measure_decode(report, decode, args, measure_device)
    render(report, top=args.top)
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    if args.trace:
        from roofline.report.trace import write_trace

        write_trace(report, args.trace)
        print(f"wrote {args.trace} (open it in https://ui.perfetto.dev or chrome://tracing)")
    emit_outputs(report, profile, args)
    return 0


def _measure(report, analysis, args, device: str) -> None:
    """Time the real model on the device and put the measurements beside the predictions."""
    from roofline.checks import attach_alternatives, attach_host_speed, attach_measurement
    from roofline.graph.loading import load_model_file
    from roofline.measure.run import add_per_op, measure

    if args.tf32:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
    real = load_model_file(args.model_file, materialize=True)
    overheads = analysis.dev.overheads
    # every timing before the per-op profile: a profiler session slows later launches (roofline.measure.run)
    measurement = measure(analysis.graph, real.model, real.args, real.kwargs, device, per_op=False, overheads=overheads)
    alternatives = None
    if analysis.kind == "cuda":
        from roofline.measure.alternatives import measure_alternatives

        alternatives = measure_alternatives(real.model, real.args, real.kwargs, device, overheads=overheads)
    add_per_op(measurement, analysis.graph, real.model, real.args, real.kwargs, device)
    attach_measurement(report, measurement, analysis)
    if measurement.host_speed is not None:
        attach_host_speed(report, analysis, measurement.host_speed.scale)
    if alternatives is not None:
        attach_alternatives(report, *alternatives, predict_at=analysis.at_host_scale)


def _train_step(args, loaded):
    """The training step the flags ask for (None without --train); the model file's loss_fn if it has one."""
    if not args.train:
        return None
    from roofline.graph.training import TrainStep

    loss_fn = getattr(loaded.module, "loss_fn", None)
    if loss_fn is not None and not callable(loss_fn):
        raise ModelFileError(f"{loaded.path.name}: loss_fn must be a function loss_fn(output, *inputs) returning a scalar tensor")
    return TrainStep(optimizer=args.optimizer, implementation=args.optimizer_impl, loss=args.loss, loss_fn=loss_fn)


def _measure_train(report, analysis, args, device: str) -> None:
    """Time real training steps on the device and put them, per phase and in memory, beside the prediction."""
    from roofline.checks import attach_host_speed, attach_step_measurement
    from roofline.graph.loading import load_model_file
    from roofline.measure.train import measure_step

    real = load_model_file(args.model_file, materialize=True)
    step = analysis.options.train.for_device(analysis.kind)
    if analysis.graph.training is not None:  # the implementation the prediction captured
        from dataclasses import replace

        step = replace(step, implementation=analysis.graph.training.implementation)
    measured = measure_step(real.model, real.args, real.kwargs, step, device, overheads=analysis.dev.overheads)
    attach_step_measurement(report, measured)
    if measured.host_speed is not None:
        attach_host_speed(report, analysis, measured.host_speed.scale)


def _with_benched_kernels(analysis, profile, device: str, name: str):
    """The same analysis with the model's kernels timed at their exact shapes on ``device`` and
    added to (a copy of) the profile's kernel table."""
    from calibrate.kernels import time_graph_kernels
    from roofline.errors import DeviceNotAvailable
    from roofline.pipeline import Analysis

    if analysis.kind != "cuda":
        raise DeviceNotAvailable("--bench-kernels times GPU kernels; use a GPU profile on its machine")
    profile = profile.model_copy(deep=True)
    table = profile.gpu.measurements.kernels
    table.extend(time_graph_kernels(analysis.graph, device, {e.key for e in table}, model=name))
    return Analysis(analysis.graph, profile, analysis.kind, analysis.options, name=analysis.name, is_module=analysis.is_module,
                    capture_at=analysis._capture_at, batch=analysis._batch, host_read=analysis.host_read)


def _measure_decode(report, decode, args, device: str) -> None:
    """Time the decode loop and put it beside the prediction, also at the host speed timed beside it."""
    from roofline.checks import attach_decode_host_speed
    from roofline.graph.loading import load_model_file
    from roofline.measure.decode import measure_decode

    real = load_model_file(args.model_file, materialize=True)
    m = measure_decode(real.model, real.args, real.kwargs, device, args.decode, decode.prefill.dev.overheads)
    d = report.decode
    d.measured_prefill_s, d.measured_total_s, d.measured_per_token_s = m.prefill.median_s, m.loop.median_s, m.per_token_s
    d.measured_spread_s = m.loop.iqr_s
    if m.host_speed is not None:
        attach_decode_host_speed(report, decode, m.host_speed.scale)
    for t in (m.prefill, m.loop):
        if t.warning:
            report.warnings.append(t.warning)


def _placement_sweep(report, loaded, profile, options, measure_device) -> None:
    """Fill report.placement_sweep from the model file's sweep(); measure each size with --measure."""
    import torch

    from roofline.advice.placement import crossover
    from roofline.pipeline import placement_sweep

    sweep = getattr(loaded.module, "sweep", None)
    if sweep is None:
        raise ModelFileError(f"--placement-sweep needs {loaded.path.name} to define sweep() yielding (label, model, example_inputs)")
    with torch.device("meta"):
        entries = list(sweep())
    result = placement_sweep(entries, profile, options)
    if result is None:
        return
    if measure_device and measure_device.startswith("cuda"):
        from roofline.graph.capture import normalize_inputs
        from roofline.graph.loading import load_model_file
        from roofline.measure.alternatives import measure_placement

        real = load_model_file(loaded.path, materialize=True)
        for point, (label, model, inputs) in zip(result.points, real.module.sweep()):
            if point.cpu_s > 2.0 or point.gpu_s + point.transfer_s > 2.0:
                continue  # too long to time within a sweep
            args, kwargs = normalize_inputs(inputs)
            m = measure_placement(model, args, kwargs, measure_device)
            point.measured_cpu_s, point.measured_gpu_total_s = m["cpu_s"], m["gpu_with_copies_s"]
        measured = [(p.size, "cuda" if p.measured_gpu_total_s < p.measured_cpu_s else "cpu") for p in result.points if p.measured_cpu_s is not None]
        result.measured_crossover = crossover(measured)
    report.placement_sweep = result
    if result.crossover is not None:
        line = f"placement over {result.parameter}: the GPU (copies included) wins from {result.parameter}={result.crossover}"
    else:
        line = f"placement over {result.parameter}: the CPU wins at every size of the sweep"
    if result.measured_crossover is not None:
        line += f" (measured: from {result.measured_crossover})"
    report.advice.append(line)


def emit_outputs(report, profile, args) -> list[Path]:
    """After the analysis: write the charts (``--plot``) and the HTML page (``--report``); returns the files written."""
    written: list[Path] = []
    plot, page = args.plot, args.report
    if not plot and not page:
        return written
    check_output_args(args)
    if plot:
        if plot.lower().endswith((".html", ".htm")):
            raise RooflineError(f"--plot {plot}: charts are .png or .svg; use --report {plot} for the HTML page")
        from roofline.report.charts import plot_all

        written += plot_all(report, profile, plot)
    if page:
        from roofline.report.html import write_html

        written.append(write_html(report, profile, page))
    for w in written:
        print(f"wrote {w}")
    return written


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more")
    return value
