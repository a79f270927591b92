"""Output paths checked before any work: an unwritable path fails in one line, not after the run."""

from __future__ import annotations

import os
from pathlib import Path

from roofline.errors import ProfileError, RooflineError


def check_writable(path: str) -> None:
    """Refuse an unusable ``calibrate --output`` path before a minute of measuring."""
    p = Path(path).expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ProfileError(f"--output {path} is a directory; give a file path such as {p / 'profile.json'}")
    if p.exists() and not os.access(p, os.W_OK):
        raise ProfileError(f"cannot write profile to {path}: the file is read-only; choose another --output path")
    # permission bits do not tell everything (root, read-only or virtual file systems): make the
    # folder the profile will be saved in, and a file in it, now
    try:
        parent.mkdir(parents=True, exist_ok=True)
        probe_file = parent / f".roofline-write-check-{os.getpid()}"
        probe_file.write_text("")
        probe_file.unlink()
    except OSError as e:
        raise ProfileError(f"cannot write profile to {path}: {e.strerror or e}; choose another --output path")


def check_json_path(path: str, flag: str = "--json", what: str = "the JSON report") -> None:
    """Refuse an unusable JSON output path (``--json``, ``--trace``) before the analysis (and any
    measurement) runs."""
    p = Path(path)
    if p.is_dir():
        raise RooflineError(f"{flag} {path} is a directory; give a file path such as {p / 'report.json'}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise RooflineError(f"cannot write {what} to {path}: its folder does not exist or is not writable")


def check_output_path(path: str, kind: str, flag: str = "--output") -> None:
    """Refuse a path that cannot be written, before any work: one-line ``RooflineError``.

    ``flag`` names the option in messages (``--output`` for ``roofline plot``, ``--plot`` for advise)."""
    p = Path(path).expanduser()
    raw = str(path)
    if kind == "report":
        if p.suffix.lower() not in (".html", ".htm"):
            raise RooflineError(f"--report {path}: give a file name ending in .html")
    is_dir = p.is_dir() or raw.endswith(("/", os.sep))
    if kind == "report" and is_dir:
        raise RooflineError(f"--report {path} is a directory; give a file name ending in .html")
    if kind == "plot" and not is_dir and p.suffix and p.suffix.lower() not in (".png", ".svg", ".html", ".htm"):
        allowed = "a .png or .svg file name, a .html page or a directory" if flag == "--output" else "a .png or .svg file name or a directory"
        raise RooflineError(f"{flag} {path}: use {allowed}")
    if flag == "--plot" and p.suffix.lower() in (".html", ".htm"):
        raise RooflineError(f"--plot {path}: for an HTML page use --report {path}")
    target_dir = p if is_dir else p.parent
    probe = target_dir if str(target_dir) else Path(".")
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise RooflineError(f"cannot write {path}: {probe} is not a writable directory; choose another path")
    if not is_dir and p.exists() and not os.access(p, os.W_OK):
        raise RooflineError(f"cannot write {path}: permission denied; choose another path")


def check_output_args(args) -> None:
    """Optional, before the analysis: fail fast on an unwritable --plot / --report path."""
    if getattr(args, "plot", None):
        check_output_path(args.plot, "plot", flag="--plot")
    if getattr(args, "report", None):
        check_output_path(args.report, "report")
