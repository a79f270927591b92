"""Exhaustive sweep that checks a profile's peaks: is each calibrated peak >= 95% of the best found?

Calibration must be fast (under a minute), so it measures a grid; this script spends several
minutes on many more matmul shapes per dtype, device copies up to several GB and host<->device
copies up to 4 GB, with the same timing protocol, and prints calibrated / best for every peak.

    python benchmarks/calibration_sweep.py --profile PATH [--device cuda] [--json OUT]

Also compares two profiles of the same machine (repeatability):

    python benchmarks/calibration_sweep.py --compare A.json B.json
"""

from __future__ import annotations

import argparse
import statistics
import math
import itertools
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from calibrate.matmul import measure_point  # noqa: E402
from calibrate.memory import measure_bandwidth  # noqa: E402
from calibrate.transfer import measure_transfer  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402


def matmul_shapes(dtype: str) -> list[tuple[int, int, int]]:
    squares = [int(round(2 ** (e / 2))) // 64 * 64 for e in range(22, 29)]  # 2048 .. 16384, steps of sqrt(2)
    shapes = {(s, s, s) for s in squares}
    big = (4096, 8192, 12288, 16384)
    shapes |= set(itertools.product(big, big, big))
    if dtype == "float32":  # slow at ~50 TFLOP/s: keep to the shapes that can reach the peak
        shapes = {s for s in shapes if s[0] * s[1] * s[2] <= 8192**2 * 16384}
    return sorted(shapes)


def peaks_of(profile, part: str) -> dict[str, float]:
    p = profile.gpu if part == "gpu" else profile.host
    cache = p.identity.l2_cache_bytes if part == "gpu" else p.identity.l3_cache_bytes
    m = p.measurements
    out = {f"matmul {c.dtype} FLOP/s": c.peak_flop_per_s for c in m.matmul}
    out |= {f"bandwidth {c.kind} DRAM B/s": c.dram_bytes_per_s(cache) for c in m.bandwidth}
    # transfers: the best measured copy rate, as the sweep reports (the fitted asymptote sits below
    # it for pageable memory, whose large copies run slower than mid-sized ones)
    out |= {f"{c.direction} {c.host_memory} B/s": c.peak_bytes_per_s for c in m.transfers}
    out |= {f"{c.op} {c.dtype} DRAM B/s": c.dram_bytes_per_s(cache) for c in m.pointwise}
    # fused RNN layers: 100-step layers per second, put at the profile's host speed as prediction
    # does (roofline.model.curves._rnn_host_factor: by the RNN stage's median host-speed index)
    from roofline.model.curves import _rnn_host_factor

    host = _rnn_host_factor(m.rnn, m.overheads)
    for c in m.rnn:
        for pt in c.points:
            out[f"{pt.kind} {c.dtype} b{pt.batch} h{pt.hidden} 100-step layer/s"] = 1.0 / (host * (pt.fixed_s + 100 * pt.step_s))
    return out


def compare(a_path: str, b_path: str) -> int:
    a, b = load_profile_file(Path(a_path)), load_profile_file(Path(b_path))
    worst = 0.0
    print(f"{'peak':<36} {'A':>12} {'B':>12} {'B/A':>7}")
    for part in ("gpu", "cpu"):
        if part == "gpu" and (a.gpu is None or b.gpu is None):
            continue
        pa, pb = peaks_of(a, part), peaks_of(b, part)
        for key in pa:
            if key in pb:
                r = pb[key] / pa[key]
                worst = max(worst, abs(r - 1))
                print(f"{part + ' ' + key:<36} {pa[key]:>12.4g} {pb[key]:>12.4g} {r:>7.3f}")
    print(f"largest disagreement between the two calibrations: {100 * worst:.1f}% (target <= 5%)")
    if a.gpu is not None and b.gpu is not None and a.gpu.measurements.rnn and b.gpu.measurements.rnn:
        for form, (median, most) in rnn_repeatability(a.gpu.measurements, b.gpu.measurements).items():
            print(f"gpu fused RNN 100-step layers, {form}: B/A within {median:.2f}x (median), {most:.2f}x (max)")
    return 0


def rnn_repeatability(a, b) -> dict[str, tuple[float, float]]:
    """How far two calibrations' fused RNN layers (100 steps, point for point) lie apart, three ways:
    as timed, each point put at its profile's host speed by its own host-speed index, and the whole
    RNN stage put there by its median index (what prediction does: roofline.model.curves._rnn_host_factor)."""
    from roofline.model.curves import _rnn_host_factor
    from roofline.model.host import calibrated_index_s

    def layer_s(p):
        return p.fixed_s + 100 * p.step_s

    def own(m, p):
        return calibrated_index_s(m.overheads) / p.host_index_s if p.host_index_s else 1.0

    forms = {"as timed": lambda m, p: 1.0, "each point by its own index": own,
             "the stage by its median index": lambda m, p: _rnn_host_factor(m.rnn, m.overheads)}
    out = {}
    for form, factor in forms.items():
        ratios = [abs(math.log(factor(b, pb) * layer_s(pb) / (factor(a, pa) * layer_s(pa))))
                  for ca, cb in zip(a.rnn, b.rnn) for pa, pb in zip(ca.points, cb.points)]
        out[form] = (math.exp(statistics.median(ratios)), math.exp(max(ratios)))
    return out


def sweep(profile_path: str, device: str, out_json: str | None) -> int:
    profile = load_profile_file(Path(profile_path))
    if profile.gpu is None:
        print("this sweep checks a GPU profile; the profile has no GPU part")
        return 2
    l2 = profile.gpu.identity.l2_cache_bytes or (50 << 20)
    warnings: list[str] = []
    best: dict[str, tuple[float, str]] = {}
    t0 = time.perf_counter()
    with torch.inference_mode():
        for dtype in ("bfloat16", "float16", "tf32", "float32"):
            for m, n, k in matmul_shapes(dtype):
                pt = measure_point(m, n, k, dtype, device, 2 * l2, 0.03, warnings)
                key = f"matmul {dtype} FLOP/s"
                if pt.flop_per_s > best.get(key, (0, ""))[0]:
                    best[key] = (pt.flop_per_s, f"{m}x{n}x{k}")
            print(f"[{time.perf_counter() - t0:6.1f} s] matmul {dtype}: best {best[key][0] / 1e12:.1f} TFLOP/s at {best[key][1]}", flush=True)
        total = torch.cuda.get_device_properties(device).total_memory
        sizes = [s for s in (256 << 20, 512 << 20, 1 << 30, 2 << 30, 4 << 30, 8 << 30, 16 << 30) if s <= total // 3]
        for kind in ("copy", "read", "write"):
            curve = measure_bandwidth(kind, sizes, device, budget_s=0.2, warnings=warnings)
            top = max(curve.points, key=lambda p: p.bytes_per_s)
            best[f"bandwidth {kind} DRAM B/s"] = (top.bytes_per_s, f"{top.working_set_bytes >> 20} MiB")
            print(f"[{time.perf_counter() - t0:6.1f} s] {kind}: best {top.bytes_per_s / 1e12:.3f} TB/s at {top.working_set_bytes >> 20} MiB", flush=True)
        tsizes = [64 << 20, 256 << 20, 1 << 30, 4 << 30]
        for direction in ("h2d", "d2h"):
            for mem in ("pinned", "pageable"):
                curve = measure_transfer(direction, mem, tsizes, device, budget_s=0.5, warnings=warnings)
                top = max(curve.points, key=lambda p: p.bytes_per_s)
                best[f"{direction} {mem} B/s"] = (top.bytes_per_s, f"{top.bytes >> 20} MiB")
                print(f"[{time.perf_counter() - t0:6.1f} s] {direction} {mem}: best {top.bytes_per_s / 1e9:.1f} GB/s at {top.bytes >> 20} MiB", flush=True)

    calibrated = peaks_of(profile, "gpu")
    print()
    print(f"{'peak':<30} {'calibrated':>12} {'sweep best':>12} {'at':>16} {'fraction':>9}")
    worst = 1.0
    rows = []
    for key, (value, where) in best.items():
        cal = calibrated.get(key)
        if cal is None:
            continue
        frac = cal / value
        worst = min(worst, frac)
        rows.append(dict(peak=key, calibrated=cal, sweep_best=value, at=where, fraction=frac))
        print(f"{key:<30} {cal:>12.4g} {value:>12.4g} {where:>16} {frac:>9.3f}")
    print(f"lowest fraction: {worst:.3f} (target >= 0.95); sweep took {time.perf_counter() - t0:.0f} s")
    if out_json:
        Path(out_json).write_text(json.dumps(dict(device=profile.gpu.identity.name, rows=rows, lowest=worst), indent=1))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--json")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.profile:
        ap.error("--profile is required for a sweep")
    return sweep(args.profile, args.device, args.json)


if __name__ == "__main__":
    raise SystemExit(main())
