"""``roofline calibrate`` and ``roofline profiles``: measure this machine, and list the profiles."""

from __future__ import annotations

from pathlib import Path

from roofline.cli.paths import check_writable
from roofline.errors import RooflineError


def add_parsers(sub) -> None:
    cal = sub.add_parser("calibrate", help="measure this machine's ceilings and save a profile")
    cal.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda if present, else cpu)")
    cal.add_argument("--quick", action="store_true", help="a reduced grid: seconds instead of a minute")
    cal.add_argument("--output", help="where to write the profile JSON (default: the user profile directory)")
    cal.add_argument("--name", help="profile name (default: derived from the device name)")
    cal.add_argument("--no-progress", action="store_true", help="no progress bar")
    cal.add_argument(
        "--for", dest="for_model", metavar="MODEL.py",
        help="GPU: time each distinct kernel of this model file once at its exact shapes and add them to the profile's kernel table (--profile: which profile; default the newest saved one)",
    )
    cal.add_argument("--profile", help="with --for: the profile to add the kernels to")
    cal.add_argument("--with-compile", action="store_true", help="GPU: also measure torch.compile's host costs (two compilations, about 25 s more) for the torch.compile advice")
    cal.add_argument(
        "--force", action="store_true",
        help="save the profile even when it fails its sanity checks after re-measuring (it is marked so, and every report says it)",
    )
    cal.add_argument(
        "--no-priority", action="store_true",
        help="measure at the usual scheduling priority (by default calibration raises it where the OS allows, so other programs disturb it less)",
    )
    cal.set_defaults(func=_cmd_calibrate)

    prof = sub.add_parser("profiles", help="list shipped and saved profiles")
    prof.set_defaults(func=_cmd_profiles)


def _cmd_calibrate(args) -> int:
    from rich.table import Table

    from calibrate.runner import resolve_device, run_calibration, summary_rows
    from roofline.profile_checks import profile_caveats
    from roofline.profiles import save_profile, user_profile_dir

    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.for_model:
        return _cmd_calibrate_for(args)
    device = resolve_device(args.device)
    command = "roofline calibrate " + " ".join(_argv_tail(args))  # recorded in the profile
    # Check the output location before spending a minute measuring.
    if args.output:
        check_writable(args.output)
    from roofline.report.terminal import make_console

    console = make_console()
    profile = run_calibration(
        device, quick=args.quick, name=args.name, show_progress=not args.no_progress, command=command, with_compile=args.with_compile,
        raise_priority=not args.no_priority, on_busy=lambda line: console.print(f"note: {line}", style="yellow", markup=False),
    )
    failed = profile.calibration.checks_failed
    if failed and not args.force:
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise CalibrationRefused(
            f"the profile fails its sanity checks after re-measuring: {failed[0]}{more}; nothing was saved. "
            "Close other programs and rerun `roofline calibrate`, or add --force to save it marked as failing its checks"
        )
    profile.calibration.forced = bool(failed)
    out = Path(args.output) if args.output else user_profile_dir() / f"{profile.name}.json"
    replaced = _describe_existing(out)
    path = save_profile(profile, out)
    table = Table(title=f"roofline profile '{profile.name}' ({profile.calibration.duration_s:.1f} s)")
    for col in ("part", "quantity", "measured", "theoretical", "ratio"):
        table.add_column(col, justify="right" if col in ("ratio",) else "left")
    for row in summary_rows(profile):
        table.add_row(*row)
    console.print(table)
    gpu_src = profile.gpu.peaks.source if profile.gpu else None
    console.print(f"theoretical figures: {gpu_src + '; ' if gpu_src else ''}CPU {profile.host.peaks.source}", style="dim", markup=False)
    for w in profile.calibration.warnings[:10]:
        console.print(f"warning: {w}", style="yellow", markup=False)
    if len(profile.calibration.warnings) > 10:
        console.print(f"... and {len(profile.calibration.warnings) - 10} more spread warnings (see the profile JSON)", style="yellow", markup=False)
    for line in profile.calibration.remeasured:
        console.print(f"re-measured after failing a check: {line}", style="dim", markup=False)
    load = profile.calibration.load
    if load is not None:
        console.print(f"machine load: {load.summary()}", style="yellow" if load.busy else "dim", markup=False)
    for caveat in profile_caveats(profile):
        console.print(f"warning: {caveat}", style="yellow", markup=False)
    console.print(f"saved {path}" + (f", replacing {replaced}" if replaced else ""), markup=False)
    return 0


class CalibrationRefused(RooflineError):
    """The calibrated profile still fails its sanity checks after re-measuring."""


def _describe_existing(path: Path) -> str | None:
    """What a save to ``path`` replaces: the profile there (name, date, host), or the file."""
    if not path.exists():
        return None
    from roofline.errors import ProfileError
    from roofline.profiles import load_profile_file

    try:
        old = load_profile_file(path)
    except ProfileError:
        return "a file that was not a usable profile"
    return f"profile '{old.name}' of {old.calibration.created_at:%Y-%m-%d %H:%M} (host {old.calibration.hostname or '?'})"


def _cmd_calibrate_for(args) -> int:
    """Add the model's shape-exact kernels to a GPU profile's kernel table and save it."""
    from calibrate.kernels import time_graph_kernels
    from roofline.errors import ProfileError
    from roofline.graph.loading import check_model_path, load_model_file
    from roofline.measure.device import device_for
    from roofline.pipeline import Options, capture_for, resolve_profile
    from roofline.profiles import save_profile, shipped_profile_dir, user_profile_dir

    check_model_path(args.for_model)
    profile, kind = resolve_profile(args.profile, "cuda")
    device = device_for(profile, kind, "calibrate --for")  # refuses a profile of another machine, or no GPU
    if args.output:
        check_writable(args.output)
    loaded = load_model_file(args.for_model)
    graph = capture_for(loaded.model, loaded.args, loaded.kwargs, kind, Options(device=kind, capture_device=device.split(":")[0]), loaded.materializer())
    table = profile.gpu.measurements.kernels
    entries = time_graph_kernels(graph, device, {e.key for e in table}, model=loaded.path.name)
    table.extend(entries)
    source = Path(profile.source_file) if profile.source_file else None
    if args.output:
        out = Path(args.output)
    elif source is not None and shipped_profile_dir() not in source.parents:
        out = source
    else:
        out = user_profile_dir() / f"{profile.name}.json"
    if not entries and not table:
        raise ProfileError(f"no kernel of {loaded.path.name} could be timed; the profile is unchanged")
    path = save_profile(profile, out)
    print(f"timed {len(entries)} new kernels of {loaded.path.name} ({len(table)} in the table); saved {path}")
    return 0


def _argv_tail(args) -> list[str]:
    out = ["--device", args.device]
    if args.quick:
        out.append("--quick")
    if args.with_compile:
        out.append("--with-compile")
    if args.force:
        out.append("--force")
    if args.no_priority:
        out.append("--no-priority")
    if args.name:
        out += ["--name", args.name]
    if args.output:
        out += ["--output", args.output]
    return out


def _cmd_profiles(args) -> int:
    from rich.markup import escape
    from rich.table import Table

    from roofline.profiles import available_profiles, shipped_profile_dir, user_profile_dir
    from roofline.report.terminal import make_console

    entries = available_profiles(include_unusable=True)
    console = make_console()
    if not entries:
        console.print(f"no profiles found in {shipped_profile_dir()} or {user_profile_dir()}; run `roofline calibrate`", markup=False)
        return 0
    table = Table(title="roofline profiles")
    for col in ("name", "source", "device", "created", "host", "quick", "checks", "path"):
        table.add_column(col)
    for e in entries:
        if e.problem:
            table.add_row(escape(e.name), e.source, "[red]unusable[/red]", "-", "-", "-", "-", escape(str(e.path)))
        else:
            table.add_row(escape(e.name), e.source, escape(e.device), e.created_at, escape(e.host), "yes" if e.quick else "no", _check_status(e.path), escape(str(e.path)))
    console.print(table)
    for e in entries:
        if e.problem:
            console.print(f"unusable: {e.problem}", markup=False)
    return 0


def _check_status(path: Path) -> str:
    """'ok', or the sanity checks a profile fails (those prediction does not repair) and 'busy'."""
    from roofline.profile_checks import check_profile
    from roofline.profiles import load_profile_file

    profile = load_profile_file(path)
    failed = sorted({p.check for p in check_profile(profile) if not p.repaired_at_prediction})
    notes = [f"fails {', '.join(failed)}"] if failed else []
    if profile.calibration.forced:
        notes.append("forced")
    if profile.calibration.load is not None and profile.calibration.load.busy:
        notes.append("busy")
    return "; ".join(notes) or "ok"
