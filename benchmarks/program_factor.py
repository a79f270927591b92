"""The real-program factor of a GPU profile's machine, fitted to its recorded zoo runs.

    python benchmarks/program_factor.py PROFILE RECORD.json [RECORD.json ...] [--factors F ...] [--write]

A model's eager host time runs above what the calibrated op mix predicts at the same host speed: its
module code between ops evicts the dispatcher's instructions and data from the caches
(``roofline.model.host.PROGRAM_FACTOR_GPU``, docs/design.md "The host's real-program factor"). How far
above depends on the host's processor as well as on the code: the lent H200's host runs the zoo's
models further above its op mix than the lent H100's. For each factor this prices every record's
graphs again with PROFILE at the host scale of each run (the index timed beside it, so the session's
host speed drops out), prints each record's median |error| at that scale, and picks the factor whose
records' medians have the lowest mean (a record is one session: a record of 138 runs does not
outweigh one of 36). ``--write`` stores it in PROFILE, which prediction
then uses in place of ``PROGRAM_FACTOR_GPU``, recorded with its records (``overheads.program_fit``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.zoo.run import _replayed, replay_inputs, with_host_model  # noqa: E402
from roofline.pipeline import Options  # noqa: E402
from roofline.errors import ProfileError  # noqa: E402
from roofline.profiles import load_profile_file, save_profile  # noqa: E402
from roofline.schema.profile import ProgramFit  # noqa: E402

FACTORS = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]


def host_scale_median(record: dict, profile, kind: str, graphs: dict, python_calls: dict | None, factor: float) -> float:
    """Median |error| at the host scale of a record's runs priced with ``profile`` at program ``factor``."""
    scaled = with_host_model(profile, kind, program_factor=factor)
    options = Options(device=kind, allow_tf32=record["allow_tf32"], conv_tf32=record["conv_tf32"], batch_sweep=False)
    errors = []
    for old in record["rows"]:
        row = _replayed(old, graphs, scaled, kind, options, {}, python_calls)[0]
        if row.get("predicted_now_s"):
            errors.append(abs(row["predicted_now_s"] - row["measured_s"]) / row["measured_s"])
    if not errors:
        raise SystemExit("a record has no run timed beside the host-speed index (--fixed-overheads runs): it cannot weigh a program factor")
    return statistics.median(errors)


def input_problem(profile, profile_path: Path, records: list[Path], write: bool) -> str | None:
    """One line naming what makes these inputs unusable (and the fix), else None: the fit reads GPU
    zoo records that keep the profile they ran with (their host scales are read against it) and
    their captured graphs, and writes a plain JSON GPU profile."""
    if profile.gpu is None:
        return f"{profile_path} has no GPU part: the real-program factor is a GPU profile's"
    if write and profile_path.suffix != ".json":
        return f"--write rewrites a plain JSON profile; {profile_path} is not one (pass the .json file)"
    for path in records:
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            return f"cannot read the record {path}: {e}; pass a zoo record of benchmarks/results (accuracy.py --zoo --merge writes them)"
        if not isinstance(record, dict) or record.get("kind") != "cuda" or not record.get("graphs_file"):
            return f"{path} is not a GPU zoo record with its captured graphs; pass one written by `accuracy.py --zoo --merge` on a GPU"
        if not record.get("profile_file"):
            return f"{path} names no profile file, so its host scales have no reference; pass records that keep the profile they ran with"
        if not (path.parent / record["graphs_file"]).is_file():
            return f"{path}'s graphs file {record['graphs_file']} is missing beside it"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", type=Path)
    ap.add_argument("records", type=Path, nargs="+")
    ap.add_argument("--factors", type=float, nargs="+", default=FACTORS)
    ap.add_argument("--write", action="store_true", help="store the best factor in PROFILE")
    args = ap.parse_args(argv)
    try:
        profile = load_profile_file(args.profile)
    except ProfileError as e:
        raise SystemExit(str(e))
    problem = input_problem(profile, args.profile, args.records, args.write)
    if problem:
        raise SystemExit(problem)
    loaded = [replay_inputs(path, profile) for path in args.records]
    medians = {}
    for factor in args.factors:
        per_record = [host_scale_median(record, profile, kind, graphs, calls, factor) for record, profile, kind, graphs, _, calls in loaded]
        medians[factor] = statistics.mean(per_record)
        cells = "  ".join(f"{path.name} {100 * m:5.1f}%" for path, m in zip(args.records, per_record))
        print(f"program factor {factor:.2f}: median |error| at the host scale {cells}  (mean {100 * medians[factor]:.1f}%)")
    best = min(medians, key=medians.get)
    print(f"best: {best:.2f} (mean of the records' medians {100 * medians[best]:.1f}%)")
    if args.write:
        part = profile.gpu.measurements
        fit = ProgramFit(factor=best, median_error=round(medians[best], 4), records=sorted(path.name for path in args.records))
        part.overheads = part.overheads.model_copy(update=dict(program_fit=fit))
        save_profile(profile, args.profile, keep_layout=True)
        print(f"wrote {args.profile}: program factor {best:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
