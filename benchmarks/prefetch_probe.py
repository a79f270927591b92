"""Does reading the GPU libraries ahead shorten a calibration on a machine whose page cache is cold?

    python benchmarks/prefetch_probe.py --prefetch on|off --output P.json   (as root on the GPU machine)

Drops the page cache first (``/proc/sys/vm/drop_caches``: every later file read comes from the disk
again, as on a machine that just started; refuses in one line where it cannot), then runs a full
calibration in this process with or without ``calibrate.prefetch`` and prints its wall time from
the process's start, imports included, and the stages that pay first calls. Run each mode in a
fresh process, alternating.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

START = time.perf_counter()


def drop_page_cache() -> str | None:
    """None once the page cache is dropped, else why not."""
    try:
        subprocess.run(["sync"], check=True)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except (OSError, subprocess.CalledProcessError) as e:
        return f"cannot drop the page cache ({getattr(e, 'strerror', None) or e}): run as root on a machine that allows it"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prefetch", choices=["on", "off"], required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    why = drop_page_cache()
    if why:
        print(f"prefetch_probe: {why}", file=sys.stderr)
        return 2
    began = time.perf_counter()
    from pathlib import Path

    from calibrate import runner
    from roofline.profiles import save_profile

    imported = time.perf_counter() - began
    profile = runner.run_calibration("cuda", name=f"prefetch_{args.prefetch}", show_progress=False, prefetch_libraries=args.prefetch == "on")
    save_profile(profile, Path(args.output))
    stages = profile.calibration.stage_seconds
    first = {k: stages[k] for k in ("gpu conv", "gpu conv families", "gpu attention", "gpu training host costs", "gpu matmul float32") if k in stages}
    print(f"prefetch {args.prefetch}: wall {time.perf_counter() - START:.1f} s (imports after the drop {imported:.1f} s), "
          f"calibration {profile.calibration.duration_s:.1f} s; " + ", ".join(f"{k} {v:.1f}" for k, v in first.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
