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
    adv.set_defaults(func=_cmd_advise)


def _cmd_advise(args) -> int:
    from roofline.analysis import analyze, resolve_profile
    from roofline.loading import load_model_file
    from roofline.render import render

    profile, kind = resolve_profile(args.profile, args.device)  # fail fast on a bad profile
    loaded = load_model_file(args.model_file, materialize=False)

    report = analyze(
        loaded.model, loaded.example_inputs, profile, device=kind, name=loaded.name, allow_tf32=args.tf32 or None,
        materialize=loaded.materializer(), calls=args.calls, host_memory="pinned" if args.pinned else "pageable",
        user_files=[loaded.path],
    )
    report.warnings = list(loaded.warnings) + report.warnings
    render(report, top=args.top)
    if args.json:
        report.write_json(args.json)
        print(f"wrote {args.json}")
    return 0
