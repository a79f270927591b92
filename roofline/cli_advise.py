"""``roofline advise model.py``: the analysis behind the CLI."""

from __future__ import annotations


def add_advise_parsers(sub) -> None:
    adv = sub.add_parser("advise", help="trace a model file, predict per-op time and regime, and advise")
    adv.add_argument("model_file", help="a .py file defining `model` + `example_inputs`, or `get_model()` + `get_example_inputs()`")
    adv.add_argument("--profile", help="profile name or path (`roofline profiles` lists them); default: the newest saved one")
    adv.add_argument("--device", choices=["cuda", "cpu"], help="which part of the profile to predict for (default: its GPU if it has one)")
    adv.add_argument("--json", metavar="PATH", help="write the report as JSON")
    adv.add_argument("--top", type=int, default=15, help="rows in the top-ops table")
    adv.add_argument("--tf32", action="store_true", help="price float32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32=True)")
    adv.add_argument("--calls", type=int, default=1, help="placement over a loop of this many calls")
    adv.add_argument("--pinned", action="store_true", help="placement with pinned host memory for the copies")
    adv.add_argument("--measure", action="store_true", help="also run the model on the profile's device and report measured times and errors")
    adv.set_defaults(func=_cmd_advise)


def _cmd_advise(args) -> int:
    from roofline.analysis import resolve_profile, run_analysis
    from roofline.loading import load_model_file
    from roofline.render import render

    profile, kind = resolve_profile(args.profile, args.device)  # fail fast on a bad profile
    measure_device = None
    if args.measure:
        from roofline.measure import device_for

        measure_device = device_for(profile, kind)  # refuses a profile of another machine
    loaded = load_model_file(args.model_file, materialize=False)

    report, graph, dev = run_analysis(
        loaded.model, loaded.example_inputs, profile, device=kind, name=loaded.name, allow_tf32=args.tf32 or None,
        materialize=loaded.materializer(), calls=args.calls, host_memory="pinned" if args.pinned else "pageable",
        user_files=[loaded.path], capture_device="cuda" if measure_device and kind == "cuda" else "cpu",
    )
    report.warnings = list(loaded.warnings) + report.warnings
    if measure_device:
        from roofline.analysis import attach_measurement
        from roofline.measure import measure

        if args.tf32:
            import torch

            torch.backends.cuda.matmul.allow_tf32 = True
        real = load_model_file(args.model_file, materialize=True)
        attach_measurement(report, measure(graph, real.model, real.example_inputs, measure_device), dev)
    render(report, top=args.top)
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    return 0
