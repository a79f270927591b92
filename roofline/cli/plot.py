"""``roofline plot report.json``: the charts or the design-review page of a report written by
``roofline advise --json``.

Every user mistake (a file that is not a roofline report, no profile to be found, a path that cannot
be written) is a one-line ``RooflineError``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from roofline.cli.paths import check_output_path
from roofline.errors import ProfileError, RooflineError

CHART_CHOICES = ("all", "roofline", "vs_measured", "modules", "batch", "placement")


def add_parsers(sub) -> None:
    p = sub.add_parser(
        "plot",
        help="draw the roofline chart (and the others the report has data for) from a JSON report",
        description="Draw charts from a report written by `roofline advise --json`. The output's extension picks the format: "
        ".png or .svg for charts (the roofline at PATH, the others beside it as <stem>_<chart><ext>), .html for the "
        "self-contained design-review page, a directory for <dir>/<model>_<chart>.png.",
    )
    p.add_argument("report_json", help="a report written by `roofline advise --json`")
    p.add_argument("--profile", help="profile name or path (default: the one the report names)")
    p.add_argument("--output", "-o", help="PATH.png | PATH.svg | PATH.html | DIR/ (default: <report stem>_roofline.png beside the report)")
    p.add_argument("--chart", choices=CHART_CHOICES, default="all", help="which chart to draw to PATH (default: all the report has data for)")
    p.set_defaults(func=_cmd_plot)


def load_report(path) -> "Report":  # noqa: F821
    """Read and validate a JSON report; anything else is a one-line ``RooflineError``."""
    from pydantic import ValidationError

    from roofline.schema.report import REPORT_SCHEMA_VERSION, Report

    path = Path(path).expanduser()
    pass_one = "pass a file written by `roofline advise --json`"
    if path.is_dir():
        raise RooflineError(f"{path} is a directory, not a report; {pass_one}")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RooflineError(f"report {path} does not exist; write one with `roofline advise MODEL.py --json {path}`")
    except UnicodeDecodeError:
        raise RooflineError(f"{path} is not a roofline report (a binary file, not JSON); {pass_one}")
    except OSError as e:
        raise RooflineError(f"cannot read report {path}: {e.strerror or e}; {pass_one}")
    if not text.strip():
        raise RooflineError(f"{path} is empty, not a roofline report; {pass_one}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RooflineError(f"{path} is not a roofline report (not valid JSON: {e.msg} at line {e.lineno}); pass a file written by `roofline advise --json`")
    if isinstance(data, dict) and data.get("kind") == "roofline-device-profile":
        raise RooflineError(f"{path} is a device profile, not a report; pass it as --profile, and a report written by `roofline advise --json`")
    if not isinstance(data, dict) or "ops" not in data or "profile" not in data or "total" not in data:
        raise RooflineError(f"{path} is not a roofline report (no ops, profile and total); pass a file written by `roofline advise --json`")
    if data.get("schema_version") != REPORT_SCHEMA_VERSION:
        raise RooflineError(
            f"report {path} has schema_version {data.get('schema_version')!r} but this roofline reads version {REPORT_SCHEMA_VERSION}; "
            "write it again with this version's `roofline advise --json`"
        )
    try:
        return Report.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "(top level)"
        raise RooflineError(f"report {path} is invalid: {where}: {first.get('msg', 'invalid')}; write it again with `roofline advise --json`")


def profile_for_report(report, explicit: str | None = None):
    """The profile to draw ``report`` against.

    An explicit ``--profile`` wins (the user asked for it); otherwise the file the report names
    (``report.profile.source``), then a saved or shipped profile of the report's profile name. A
    report predicted for a GPU needs a profile with a GPU part.
    """
    from roofline.profiles import find_profile, load_profile_file

    ref = report.profile
    tried: list[str] = []
    profile = None
    if explicit:
        profile = find_profile(explicit)  # its own clear ProfileError when it cannot be found
        if profile.name != ref.name:
            print(f"roofline: note: the report was predicted with profile '{ref.name}'; drawing the ceilings of '{profile.name}'", file=sys.stderr)
    else:
        if ref.source:
            try:
                profile = load_profile_file(Path(ref.source))
            except ProfileError:
                tried.append(f"file {ref.source}")
        if profile is None:
            try:
                profile = find_profile(ref.name)
            except ProfileError:
                tried.append(f"profile name '{ref.name}'")
        if profile is None:
            raise RooflineError(
                f"cannot find the profile the report was made with (tried {' and '.join(tried)}); pass --profile NAME|PATH"
            )
    if ref.kind == "cuda" and profile.gpu is None:
        raise RooflineError(f"the report was predicted for a GPU but profile '{profile.name}' has no GPU part; pass --profile with the GPU profile")
    return profile


def _default_output(report_path: str) -> Path:
    p = Path(report_path).expanduser()
    return p.with_name(f"{p.stem}_roofline.png")


def _cmd_plot(args) -> int:
    from roofline.report import charts

    report = load_report(args.report_json)
    profile = profile_for_report(report, args.profile)
    out = args.output or str(_default_output(args.report_json))
    check_output_path(out, kind="plot")
    if out.lower().endswith((".html", ".htm")):
        from roofline.report.html import write_html

        print(f"wrote {write_html(report, profile, out)}")
        return 0
    if args.chart == "all":
        written = charts.plot_all(report, profile, out)
    else:
        available = charts.available_charts(report)
        if args.chart not in available:
            raise RooflineError(f"the report has no data for the {args.chart} chart (it has: {', '.join(available)})")
        if Path(out).suffix.lower() in (".png", ".svg"):
            path = Path(out).expanduser()
        else:
            path = charts.chart_paths(report, out, [args.chart])[args.chart]
        written = [charts.save(charts.make_chart(args.chart, report, profile), path)]
    for w in written:
        print(f"wrote {w}")
    return 0
