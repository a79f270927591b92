"""``roofline advise model.py``: the analysis behind the CLI."""

from __future__ import annotations

import argparse


def add_advise_parsers(sub) -> None:
    adv = sub.add_parser("advise", help="trace a model file, predict per-op time and regime, and advise")
    adv.add_argument("model_file", help="a .py file defining `model` + `example_inputs`, or `get_model()` + `get_example_inputs()`")
    adv.add_argument("--profile", help="profile name or path (`roofline profiles` lists them); default: the newest saved one")
    adv.add_argument("--device", choices=["cuda", "cpu"], help="which part of the profile to predict for (default: its GPU if it has one)")
    adv.add_argument("--json", metavar="PATH", help="write the report as JSON")
    adv.add_argument("--top", type=_positive_int, default=15, help="rows in the top-ops table")
    adv.add_argument("--tf32", action="store_true", help="price float32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32=True)")
    adv.add_argument("--calls", type=_positive_int, default=1, help="placement over a loop of this many calls")
    adv.add_argument("--pinned", action="store_true", help="placement with pinned host memory for the copies")
    adv.add_argument("--measure", action="store_true", help="also run the model on the profile's device and report measured times and errors")
    adv.add_argument("--copies", choices=["per-call", "once"], default="per-call", help="placement: inputs/outputs copied on every call, or once for the whole --calls loop")
    adv.add_argument("--batch-sweep", action=argparse.BooleanOptionalAction, default=None, help="predict time per sample over batch sizes (default: on for models of up to 600 ops)")
    adv.add_argument("--placement-sweep", action="store_true", help="CPU vs GPU over the sizes of the model file's sweep(), with the crossover")
    from roofline.cli_plot import add_output_args

    add_output_args(adv)  # --plot PATH, --report PATH.html
    adv.set_defaults(func=_cmd_advise)


def _cmd_advise(args) -> int:
    from roofline.analysis import resolve_profile, run_analysis
    from roofline.loading import load_model_file
    from roofline.render import render

    from roofline.cli_plot import check_output_args, emit_outputs

    profile, kind = resolve_profile(args.profile, args.device)  # fail fast on a bad profile
    check_output_args(args)  # and on an unwritable --plot/--report path
    if args.json:
        _check_json_path(args.json)
    measure_device = None
    if args.measure:
        from roofline.measure import device_for

        measure_device = device_for(profile, kind)  # refuses a profile of another machine
    loaded = load_model_file(args.model_file, materialize=False)

    report, graph, dev = run_analysis(
        loaded.model, loaded.example_inputs, profile, device=kind, name=loaded.name, allow_tf32=args.tf32 or None,
        materialize=loaded.materializer(), calls=args.calls, host_memory="pinned" if args.pinned else "pageable",
        user_files=[loaded.path], capture_device=None,
        copies_per_call=args.copies == "per-call", batch_sweep=args.batch_sweep,
    )
    if args.placement_sweep:
        _placement_sweep(report, loaded, profile, args, measure_device)
    report.warnings = list(loaded.warnings) + report.warnings
    if measure_device:
        from roofline.analysis import attach_measurement
        from roofline.measure import add_per_op, measure

        if args.tf32:
            import torch

            torch.backends.cuda.matmul.allow_tf32 = True
        real = load_model_file(args.model_file, materialize=True)
        # every timing before the per-op profile: a profiler session slows later launches (roofline.measure)
        measurement = measure(graph, real.model, real.example_inputs, measure_device, per_op=False, overheads=dev.overheads)
        alternatives = None
        if kind == "cuda":
            from roofline.measure import measure_alternatives

            alternatives = measure_alternatives(real.model, real.example_inputs, measure_device, overheads=dev.overheads)
        add_per_op(measurement, graph, real.model, real.example_inputs, measure_device)
        attach_measurement(report, measurement, dev)
        if measurement.host_speed is not None:
            from roofline.analysis import attach_host_speed

            attach_host_speed(report, measurement.host_speed, loaded.model, loaded.example_inputs, profile, graph)
        if alternatives is not None:
            from roofline.analysis import attach_alternatives, predict_at_host_scale

            def predict_at(scale):
                return predict_at_host_scale(report, loaded.model, loaded.example_inputs, profile, graph, scale)

            attach_alternatives(report, *alternatives, predict_at=predict_at)
    render(report, top=args.top)
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    emit_outputs(report, profile, args)
    return 0


def _placement_sweep(report, loaded, profile, args, measure_device) -> None:
    """Fill report.placement_sweep from the model file's sweep(); measure each size with --measure."""
    import torch

    from roofline.errors import ModelFileError
    from roofline.sweeps import crossover, placement_sweep

    sweep = getattr(loaded.module, "sweep", None)
    if sweep is None:
        raise ModelFileError(f"--placement-sweep needs {loaded.path.name} to define sweep() yielding (label, model, example_inputs)")
    with torch.device("meta"):
        entries = list(sweep())
    result = placement_sweep(entries, profile, allow_tf32=bool(args.tf32), host_memory="pinned" if args.pinned else "pageable")
    if result is None:
        return
    if measure_device and measure_device.startswith("cuda"):
        from roofline.loading import load_model_file
        from roofline.measure import measure_placement

        real = load_model_file(loaded.path, materialize=True)
        for point, (label, model, inputs) in zip(result.points, real.module.sweep()):
            if point.cpu_s > 2.0 or point.gpu_s + point.transfer_s > 2.0:
                continue  # too long to time within a sweep
            m = measure_placement(model, inputs, measure_device)
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

def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: give 1 or more")
    return value


def _check_json_path(path: str) -> None:
    """Refuse an unusable --json path before the analysis (and any measurement) runs."""
    import os
    from pathlib import Path

    from roofline.errors import RooflineError

    p = Path(path)
    if p.is_dir():
        raise RooflineError(f"--json {path} is a directory; give a file path such as {p / 'report.json'}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise RooflineError(f"cannot write the JSON report to {path}: its folder does not exist or is not writable")
