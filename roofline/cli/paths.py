"""Output paths checked before any work: an unwritable path fails in one line, not after the run.

Permission bits do not tell everything (root passes every check, /proc and read-only mounts refuse
files whatever the bits say), so each check creates and removes a file where the output will go.
"""

from __future__ import annotations

import os
from pathlib import Path

from roofline.errors import ProfileError, RooflineError


def _write_problem(folder: Path) -> str | None:
    """Why a file cannot be created in ``folder`` (an existing directory), or None if it can."""
    probe_file = folder / f".roofline-write-check-{os.getpid()}"
    try:
        probe_file.write_bytes(b"")
        probe_file.unlink()
    except OSError as e:
        return e.strerror or str(e)
    return None


def _existing_ancestor(folder: Path) -> Path:
    """``folder`` or its nearest parent that exists: where the folders still to be made go."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder


def _file_in_the_way(folder: Path) -> Path | None:
    """The file that stands where ``folder`` or one of its parents should be, if any."""
    existing = _existing_ancestor(folder)
    return None if existing.is_dir() else existing


def check_writable(path: str) -> None:
    """Refuse an unusable ``calibrate --output`` path before a minute of measuring."""
    p = Path(path).expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    if p.is_dir():
        raise ProfileError(f"--output {path} is a directory; give a file path such as {p / 'profile.json'}")
    if p.exists() and not os.access(p, os.W_OK):
        raise ProfileError(f"cannot write profile to {path}: the file is read-only; choose another --output path")
    blocker = _file_in_the_way(parent)
    if blocker is not None:
        raise ProfileError(f"cannot write profile to {path}: {blocker} is a file, not a folder; choose another --output path")
    # make the folder the profile will be saved in (as the save will), and a file in it, now
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ProfileError(f"cannot write profile to {path}: {e.strerror or e}; choose another --output path")
    problem = _write_problem(parent)
    if problem:
        raise ProfileError(f"cannot write profile to {path}: creating a file in {parent} failed ({problem}); choose another --output path")


def check_json_path(path: str, flag: str = "--json", what: str = "the JSON report") -> None:
    """Refuse an unusable JSON output path (``--json``, ``--trace``) before the analysis (and any
    measurement) runs."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise RooflineError(f"{flag} {path} is a directory; give a file path such as {p / 'report.json'}")
    parent = p.parent if str(p.parent) else Path(".")
    blocker = _file_in_the_way(parent)
    if blocker is not None:
        raise RooflineError(f"cannot write {what} to {path}: {blocker} is a file, not a folder; choose another {flag} path")
    if not parent.is_dir():
        raise RooflineError(f"cannot write {what} to {path}: its folder {parent} does not exist; create it or choose another {flag} path")
    if p.exists() and not os.access(p, os.W_OK):
        raise RooflineError(f"cannot write {what} to {path}: the file is read-only; choose another {flag} path")
    problem = _write_problem(parent)
    if problem:
        raise RooflineError(f"cannot write {what} to {path}: creating a file in {parent} failed ({problem}); choose another {flag} path")


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
    probe = _existing_ancestor(target_dir if str(target_dir) else Path("."))
    if not probe.is_dir():
        raise RooflineError(f"cannot write {path}: {probe} is a file, not a folder; choose another path")
    problem = _write_problem(probe)
    if problem:
        raise RooflineError(f"cannot write {path}: creating a file in {probe} failed ({problem}); choose another path")
    if not is_dir and p.exists() and not os.access(p, os.W_OK):
        raise RooflineError(f"cannot write {path}: permission denied; choose another path")


def check_output_args(args) -> None:
    """Optional, before the analysis: fail fast on an unwritable --plot / --report path."""
    if getattr(args, "plot", None):
        check_output_path(args.plot, "plot", flag="--plot")
    if getattr(args, "report", None):
        check_output_path(args.report, "report")
