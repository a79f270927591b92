"""Finding, loading and saving profiles: shipped ones under device_profiles/, saved ones in the user's dir.

Loading validates against the one schema in ``roofline.schema.profile``; a missing, corrupt, foreign or
out-of-date file raises ``ProfileError`` with one line that says what is wrong and what to do.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from roofline.errors import ProfileError
from roofline.schema.profile import PROFILE_KIND, SCHEMA_VERSION, DeviceProfile


def user_profile_dir() -> Path:
    """Where ``roofline calibrate`` saves by default: $ROOFLINE_PROFILE_DIR or the platform's data dir."""
    env = os.environ.get("ROOFLINE_PROFILE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("roofline", appauthor=False)) / "profiles"


def shipped_profile_dir() -> Path:
    """device_profiles/ of the source checkout (an editable install), else where an installed wheel
    put them (``share/roofline/device_profiles`` under the environment's or the user's prefix)."""
    env = os.environ.get("ROOFLINE_SHIPPED_PROFILES")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parent.parent / "device_profiles"
    if checkout.is_dir():
        return checkout
    import site
    import sys

    return installed_profile_dir((sys.prefix, site.getuserbase())) or checkout


def installed_profile_dir(prefixes) -> Path | None:
    """The shipped profiles a wheel installed under one of ``prefixes`` (pyproject's data-files)."""
    for prefix in prefixes:
        installed = Path(prefix) / "share" / "roofline" / "device_profiles"
        if installed.is_dir():
            return installed
    return None


@dataclass
class ProfileEntry:
    name: str
    source: str  # "shipped" or "saved"
    path: Path
    device: str
    created_at: str
    quick: bool
    host: str = ""
    problem: str | None = None  # why the file is not a usable profile (corrupt, foreign, newer schema)


def _describe_validation_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "(top level)"
    more = f" (and {err.error_count() - 1} more problems)" if err.error_count() > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{more}"


def load_profile_file(path: Path) -> DeviceProfile:
    """Load and validate one profile file."""
    path = Path(path)
    pass_one = "pass a file written by `roofline calibrate` (`roofline profiles` lists them)"
    if path.is_dir():
        raise ProfileError(f"{path} is a directory, not a profile file; {pass_one}")
    if path.suffix == ".py":
        raise ProfileError(
            f"{path} is a Python file, not a device profile; the model file comes first and the profile after it: "
            f"`roofline advise MODEL.py --profile NAME|PATH`"
        )
    try:
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    except (gzip.BadGzipFile, EOFError, zlib.error):
        raise ProfileError(f"{path} is not a gzip file, though named .gz; {pass_one}")
    except FileNotFoundError:
        raise ProfileError(f"profile file {path} does not exist; run `roofline profiles` to list the available ones")
    except OSError as e:
        raise ProfileError(f"cannot read profile {path}: {e.strerror or e}; {pass_one}")
    except UnicodeDecodeError:
        raise ProfileError(f"{path} is not a roofline device profile (a binary file, not JSON); {pass_one}")
    if not text.strip():
        raise ProfileError(f"{path} is empty, not a roofline device profile; {pass_one}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        # a file of another kind, or a profile cut short: either way not to be used, and not to be deleted unasked
        raise ProfileError(
            f"{path} is not a roofline device profile: not valid JSON ({e.msg} at line {e.lineno}), so corrupt or another kind of file; {pass_one}"
        )
    if not isinstance(data, dict) or data.get("kind") != PROFILE_KIND:
        raise ProfileError(
            f"{path} is not a roofline device profile (no \"kind\": \"{PROFILE_KIND}\"); "
            "pass a file written by `roofline calibrate`"
        )
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise ProfileError(
            f"profile {path} has schema_version {version!r} but this roofline reads version {SCHEMA_VERSION}; "
            "recalibrate with this version (`roofline calibrate`)"
        )
    try:
        profile = DeviceProfile.model_validate(data)
        profile._source_file = str(path.resolve())
        return profile
    except ValidationError as e:
        raise ProfileError(f"profile {path} is invalid: {_describe_validation_error(e)}; recalibrate to replace it")


def available_profiles(include_unusable: bool = False) -> list[ProfileEntry]:
    """Shipped and saved profiles; with ``include_unusable``, files that are not usable profiles
    too, each with its ``problem`` (``roofline profiles`` lists them as such, never silently drops them)."""
    entries: list[ProfileEntry] = []
    for source, folder in (("shipped", shipped_profile_dir()), ("saved", user_profile_dir())):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            try:
                p = load_profile_file(path)
            except ProfileError as e:
                if include_unusable:
                    entries.append(ProfileEntry(name=path.stem, source=source, path=path, device="-", created_at="-", quick=False, problem=str(e)))
                continue
            entries.append(
                ProfileEntry(
                    name=p.name,
                    source=source,
                    path=path,
                    device=p.device,
                    created_at=p.calibration.created_at.strftime("%Y-%m-%d %H:%M"),
                    quick=p.calibration.quick,
                    host=p.calibration.hostname or "",
                )
            )
    return entries


def find_profile(name_or_path: str) -> DeviceProfile:
    """``--profile NAME|PATH``: a path if it looks like one, else a saved name, else a shipped name."""
    if not name_or_path.strip():
        raise ProfileError("the profile name is empty; give a profile name or path (`roofline profiles` lists them)")
    candidate = Path(name_or_path).expanduser()
    if candidate.suffix == ".json" or os.sep in name_or_path or candidate.exists():
        return load_profile_file(candidate)
    named = [e for e in available_profiles() if e.name == name_or_path]
    saved = [e for e in named if e.source == "saved"] or named  # a saved profile stands before a shipped one
    if len(saved) > 1:
        listed = "; ".join(f"{e.path} ({e.created_at}, host {e.host or '?'})" for e in saved)
        raise ProfileError(f"{len(saved)} profiles are named '{name_or_path}': {listed}; pass one by its path")
    if saved:
        return load_profile_file(saved[0].path)
    for folder in (user_profile_dir(), shipped_profile_dir()):
        path = folder / f"{name_or_path}.json"
        if path.exists():
            return load_profile_file(path)
    names = sorted({e.name for e in available_profiles()})
    known = ", ".join(names) if names else "none yet"
    raise ProfileError(f"no profile named '{name_or_path}' (available: {known}); run `roofline calibrate` or pass a path")


def default_profile(device: str) -> DeviceProfile | None:
    """The newest saved profile that has the requested part ('cpu' or 'cuda'), if any."""
    best = None
    for entry in available_profiles():
        if entry.source != "saved":
            continue
        p = load_profile_file(entry.path)
        if device == "cuda" and p.gpu is None:
            continue
        if best is None or p.calibration.created_at > best.calibration.created_at:
            best = p
    return best


def save_profile(profile: DeviceProfile, path: Path, *, keep_layout: bool = False, layout_of: Path | None = None) -> Path:
    """Write the profile as JSON; an unwritable path is a ProfileError, not a traceback.
    ``keep_layout``: with the indent of ``layout_of`` (default: the file written over), so that a
    rewritten profile's diff shows only what moved."""
    path = Path(path).expanduser()
    try:
        indent = 1
        source = Path(layout_of).expanduser() if layout_of is not None else path
        if keep_layout and source.is_file():
            lines = source.read_text().splitlines()
            indent = (len(lines[1]) - len(lines[1].lstrip()) if len(lines) > 1 else 1) or 1
        path.parent.mkdir(parents=True, exist_ok=True)
        # through pydantic's JSON (non-finite numbers as null), laid out as Python's json writes floats
        path.write_text(json.dumps(json.loads(profile.model_dump_json()), indent=indent) + "\n")
    except OSError as e:
        raise ProfileError(f"cannot write profile to {path}: {e.strerror or e}; choose another --output path")
    return path
