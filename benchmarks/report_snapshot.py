"""Behaviour kept, shown: the JSON report of every example on the shipped profile, before and after a change.

    python benchmarks/report_snapshot.py write DIR            # one report per example and device part
    python benchmarks/report_snapshot.py compare OLD NEW      # every number equal (relative 1e-9)?

``write`` runs the CLI itself (``roofline advise EXAMPLE --profile nvidia-h100-80gb-hbm3 --json``)
for each example, once for the profile's GPU part and once for its CPU part (``--device cpu``),
with ``--placement-sweep`` where the file defines ``sweep()``. The CLI is the interface a change
must keep, so this works on any version of the code.

``compare`` flattens both reports of each example to their numeric leaves (``ops.3.kernel_s``,
``total.predicted_s``, ...) and prints every leaf that differs by more than the tolerance, is missing,
or is new. Fields a schema change renamed are matched through ``RENAMED`` below. Exit status 1 when
any number differs.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROFILE = "nvidia-h100-80gb-hbm3"
REL_TOL = 1e-9

# Old flattened path prefix -> new one, for fields a schema change moved (longest prefix first).
RENAMED: dict[str, str] = {
    # report schema 1 -> 2: the free ``extras`` dict became typed fields
    "extras.fused_total_s": "alternatives.fused_s",
    "extras.alternatives_s.eager": "alternatives.eager_s",
    "extras.alternatives_s.cuda_graphs": "alternatives.cuda_graphs_s",
    "extras.alternatives_s.torch_compile": "alternatives.torch_compile_s",
    "extras.alternatives_s.torch_compile_reduce_overhead": "alternatives.torch_compile_reduce_overhead_s",
    "extras.cuda_graph_total_s": "alternatives.cuda_graphs_s",
    "extras.streams": "streams",
}
# Leaves that describe the file or the run, not the prediction.
IGNORED = ("profile.source", "schema_version")


def examples() -> list[Path]:
    return sorted(p for p in (REPO / "examples").glob("*.py") if not p.name.startswith("_"))


def write(out: Path, only: list[str] | None) -> int:
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in examples():
        if only and path.stem not in only:
            continue
        has_sweep = "\ndef sweep(" in path.read_text()
        for part in ("cuda", "cpu"):
            target = out / f"{path.stem}.{part}.json"
            cmd = [sys.executable, "-m", "roofline", "advise", str(path), "--profile", PROFILE, "--device", part, "--json", str(target)]
            if has_sweep:
                cmd.append("--placement-sweep")
            proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
            status = "ok" if proc.returncode == 0 else f"FAILED ({proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"
            failed += proc.returncode != 0
            print(f"{path.stem:<24} {part:<5} {status}")
    return 1 if failed else 0


def flatten(x, prefix: str = "", text: bool = False) -> dict:
    """Leaves of a JSON value by dotted path: the numbers, and with ``text`` the strings and
    booleans too."""
    out: dict = {}
    if isinstance(x, dict):
        for k, v in x.items():
            out.update(flatten(v, f"{prefix}{k}.", text))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out.update(flatten(v, f"{prefix}{i}.", text))
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        out[prefix[:-1]] = float(x)
    elif text and isinstance(x, (str, bool)):
        out[prefix[:-1]] = x
    return out


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-300)
    return a == b


def renamed(path: str) -> str:
    for old in sorted(RENAMED, key=len, reverse=True):
        if path == old or path.startswith(old + "."):
            return RENAMED[old] + path[len(old):]
    return path


def compare(old_dir: Path, new_dir: Path, show: int, text: bool = False) -> int:
    differ = total = 0
    for old_file in sorted(old_dir.glob("*.json")):
        new_file = new_dir / old_file.name
        if not new_file.exists():
            print(f"{old_file.name}: missing in {new_dir}")
            differ += 1
            continue
        old = {renamed(k): v for k, v in flatten(json.loads(old_file.read_text()), text=text).items() if not k.startswith(IGNORED)}
        new = {k: v for k, v in flatten(json.loads(new_file.read_text()), text=text).items() if not k.startswith(IGNORED)}
        bad = [k for k in old if k in new and not _same(old[k], new[k])]
        gone = [k for k in old if k not in new]
        added = [k for k in new if k not in old]
        total += len(old)
        differ += len(bad) + len(gone)
        line = f"{old_file.name:<36} {len(old):>6} leaves: {len(bad)} differ, {len(gone)} missing, {len(added)} new"
        print(line)
        for k in bad[:show]:
            rel = f" ({(new[k] - old[k]) / old[k]:+.3g})" if isinstance(old[k], float) and isinstance(new[k], float) and old[k] else ""
            print(f"    {k}: {old[k]!r} -> {new[k]!r}{rel}")
        for k in gone[:show]:
            print(f"    missing: {k} = {old[k]!r}")
        for k in added[:show]:
            print(f"    new: {k} = {new[k]!r}")
    print(f"{total} {'leaves' if text else 'numbers'} compared, {differ} differ or are missing (numbers: relative tolerance {REL_TOL:g})")
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write", help="write the reports of every example into DIR")
    w.add_argument("dir", type=Path)
    w.add_argument("--only", nargs="*", help="example stems to write (default: all)")
    c = sub.add_parser("compare", help="compare two directories written by `write`")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--show", type=int, default=8, help="differing leaves to print per file")
    c.add_argument("--text", action="store_true", help="compare the strings and booleans too (op names, modules, regimes, advice)")
    args = ap.parse_args()
    if args.cmd == "write":
        return write(args.dir, args.only)
    return compare(args.old, args.new, args.show, args.text)


if __name__ == "__main__":
    raise SystemExit(main())
