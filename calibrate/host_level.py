"""Move a GPU profile's host costs to the host speed its recorded runs saw.

    python -m calibrate.host_level PROFILE RECORD.json [RECORD.json ...] [--write]

A lent GPU machine's host runs tens of percent faster or slower from one moment to the next, and
from one session to the next (``benchmarks/host_variance.py``); calibration puts its host costs at
the host's median level over its own two minutes (``calibrate.runner.host_phase``).
Every recorded zoo or probe run times the same index beside each model (``roofline.measure``): a
reading of the host's speed that does not depend on the model or on any prediction. Pooled over
runs of several sessions, those readings say where the machine's host usually is better than one
calibration's two minutes do. This command prints the typical session's index (the median over
records of each record's median) against the index the profile implies and, with ``--write``,
multiplies every host cost of the profile by it (eager dispatch,
module calls, synchronize, graph launch, torch.compile and training host costs; device times stay),
recording the move in ``overheads.host_level``.

Each record's readings are relative to the profile it ran with (its ``profile_file``); they are
converted to seconds of index by that profile's calibrated index, so records made with different
profiles of the same machine pool.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from roofline.model.host import calibrated_index_s, moved_host_costs
from roofline.profiles import load_profile_file, save_profile
from roofline.schema.profile import DeviceProfile, HostLevel


def index_readings_s(record_path: Path) -> list[float]:
    """Seconds of one pass of the host-speed index beside each run of a record."""
    record = json.loads(record_path.read_text())
    if not record.get("profile_file"):
        raise SystemExit(f"{record_path} names no profile file, so its readings have no scale; pass records that keep the profile they ran with")
    profile = load_profile_file(record_path.parent / record["profile_file"])
    index_s = calibrated_index_s(profile.part(record["kind"]).measurements.overheads)
    return [row["host_scale"] * index_s for row in record["rows"] if row.get("host_scale")]


def typical_index_s(by_record: list[list[float]]) -> float:
    """The index of a typical session: the median over records of each record's median reading. A
    record is one session's run, and a session's readings move together (its host is one sample of
    the machine's), so a record of 138 runs does not outweigh one of 20."""
    return statistics.median(statistics.median(rs) for rs in by_record if rs)


def at_host_level(profile: DeviceProfile, records: list[Path]) -> tuple[DeviceProfile, HostLevel, float]:
    """The profile with its GPU host costs at the records' typical index (``typical_index_s``), the
    move recorded in it (``HostLevel``, from calibration's costs) and this move's factor."""
    if profile.gpu is None:
        raise SystemExit("the profile has no GPU part: the host level is a GPU profile's")
    by_record = [index_readings_s(path) for path in records]
    readings = [r for rs in by_record for r in rs]
    if not readings:
        raise SystemExit("the records hold no host-speed readings (runs timed with --fixed-overheads have none)")
    overheads = profile.gpu.measurements.overheads
    previous = overheads.host_level.factor if overheads.host_level else 1.0
    factor = typical_index_s(by_record) / calibrated_index_s(overheads)
    level = HostLevel(factor=previous * factor, readings=len(readings), records=sorted(p.name for p in records))
    new = moved_host_costs(overheads, factor).model_copy(update=dict(host_level=level))
    gpu = profile.gpu.model_copy(update=dict(measurements=profile.gpu.measurements.model_copy(update=dict(overheads=new))))
    return profile.model_copy(update=dict(gpu=gpu)), level, factor


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", type=Path)
    ap.add_argument("records", type=Path, nargs="+")
    ap.add_argument("--write", action="store_true", help="rewrite PROFILE with its host costs moved")
    args = ap.parse_args(argv)
    profile = load_profile_file(args.profile)
    index_s = calibrated_index_s(profile.gpu.measurements.overheads) if profile.gpu else 1.0
    for path in args.records:
        rs = index_readings_s(path)
        if rs:
            print(f"  {path.name}: {len(rs)} readings, median x{statistics.median(rs) / index_s:.3f} of the profile's index")
    new, level, factor = at_host_level(profile, args.records)
    print(f"{level.readings} host-speed readings from {len(args.records)} records: the typical session's index x{factor:.3f} of the profile's")
    if args.write:
        save_profile(new, args.profile, keep_layout=True)
        print(f"wrote {args.profile}: host costs x{factor:.3f} (x{level.factor:.3f} of calibration's)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
