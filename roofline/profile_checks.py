"""Physical sanity checks of a device profile, and the caveats every report states about its profile.

A profile made on a busy machine, or with a plan too small for the machine, can hold figures no
machine has: a DRAM bandwidth of 0.35 GB/s, a tiny op that takes 8 ms, a larger copy that finishes
sooner than a smaller one, "DRAM" points that sit in the cache. ``check_profile`` names each such
problem. Calibration runs the checks before saving, re-measures what fails and refuses to save what
still fails (``roofline calibrate --force`` saves it marked); prediction runs them on any profile
it is given and every report says what fails (``profile_caveats``), with the profile's other
caveats: a quick profile, a machine that was busy during calibration.

The checks, by name:

- ``stall``: the smallest point of a curve, or a per-op host cost, takes longer than
  ``STALL_S``: a stall was measured, not the op (a tiny op takes microseconds); or a point inside
  the last-level cache takes ``JUMP_FACTOR`` times what the smaller points' time per byte gives
  (a plateau of scheduler ticks over microsecond ops; above ``FRESH_PAGES_BYTES`` page faults on a
  fresh output legitimately jump).
- ``monotone``: a point takes more than ``MONOTONE_FACTOR`` times (and ``MONOTONE_SLACK_S``
  more than) the time of a larger one (a larger copy, a matmul larger in every dimension). More
  work rarely takes less time: the slower point caught a disturbance, or (by less than
  ``STALL_SHAPED_FACTOR``) a library chose a slow kernel for that shape, which re-measuring
  reproduces. Prediction caps such points at the larger one's time, so for a saved profile this is
  repaired, not a caveat; calibration re-measures them, and refuses only stall-shaped ones.
- ``dram_range``: a DRAM bandwidth outside what memory does: below ``MIN_DRAM_BYTES_PER_S`` of the
  part, or above ``RATE_CEILING`` times the datasheet's peak.
- ``dram_beyond_cache``: the DRAM figure of a bandwidth curve is read at least partly from points
  inside the last-level cache: it runs more than ``CACHE_RATE_FACTOR`` times faster than the points
  beyond the cache (or, with none beyond it, than the curve's peak allows).
- ``reaches_dram``: a bandwidth or op-family curve ends inside the last-level cache at its cache
  rate, so every larger op would be priced at a cache rate.
- ``matmul_rate``: the matmul curve's top corner (the most work) runs below ``TOP_RATE_SHARE`` of
  the curve's best rate (large products were disturbed more than small ones), or a rate exceeds
  ``RATE_CEILING`` times the datasheet's peak.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from roofline.schema.profile import DeviceProfile

STALL_S = 1e-3  # a tiny op (the smallest point of a curve, one dispatch) takes microseconds
MONOTONE_FACTOR = 1.5  # a point this many times slower than a larger one was disturbed ...
MONOTONE_SLACK_S = 25e-6  # ... by more than this (tiny GPU products differ by microseconds: kernel choice)
STALL_SHAPED_FACTOR = 3.0  # slower than this times a larger point: a stall; below, possibly a kernel choice
JUMP_FACTOR = 10.0  # inside the cache, time grows at most in proportion to the bytes (10x: a stall)
FRESH_PAGES_BYTES = 32 << 20  # above glibc's largest mmap threshold a fresh output is new pages: faults, not stalls
MIN_DRAM_BYTES_PER_S = {"cpu": 1e9, "gpu": 50e9}
RATE_CEILING = 1.5  # measured rates above this times the peak are timing errors
CACHE_RATE_FACTOR = 1.25  # a DRAM figure this much faster than the points beyond the cache is a cache figure
LEFT_CACHE_SHARE = 0.8  # a curve whose end runs at most this share of its peak has left the cache
TOP_RATE_SHARE = 0.5  # the top corner of a matmul grid runs at least this share of the best rate
FAMILY_OPS = ("sin", "unary", "add", "mul_broadcast", "layer_norm", "softmax")  # op-family curves that stream memory


@dataclass(frozen=True)
class Problem:
    """One failed check: which, where, and the points to re-measure."""

    check: str
    part: str  # "cpu" or "gpu"
    stage: str  # what measured it: "bandwidth copy", "pointwise sin float32", "matmul float32", "overheads"
    detail: str
    points: tuple = ()  # sizes (working set or elements) or (m, n, k) shapes of the failing points
    repaired_at_prediction: bool = False  # prediction caps such points (monotone): no caveat for a saved profile
    too_fast: bool = False  # the points are faster than physics allows (a re-measure keeps the slower figure)
    blocking: bool = True  # calibration refuses to save a profile that still fails it after re-measuring

    def __str__(self) -> str:
        return f"{self.check} ({self.part} {self.stage}): {self.detail}"


def _mib(n: float) -> str:
    return f"{n / 2**20:.3g} MiB"


def _gbs(x: float) -> str:
    return f"{x / 1e9:.3g} GB/s"


def _us(t: float) -> str:
    return f"{t * 1e6:.0f} us"


def _slower(t: float, bound: float) -> bool:
    return t > MONOTONE_FACTOR * bound and t - bound > MONOTONE_SLACK_S


def _monotone_points(sizes, times, stage: str, part: str, unit) -> list[Problem]:
    """Points that take longer than ``MONOTONE_FACTOR`` x a larger point of the same curve."""
    times = np.asarray(times, dtype=np.float64)
    if times.size < 2:
        return []
    later_min = np.minimum.accumulate(times[::-1])[::-1]  # fastest time at this size or larger
    bad = [i for i in range(times.size - 1) if _slower(times[i], later_min[i + 1])]
    if not bad:
        return []
    i = max(bad, key=lambda j: times[j] / later_min[j + 1])
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    detail = f"{unit(sizes[i])} took {_us(times[i])}, longer than a larger point's {_us(later_min[i + 1])}{more}"
    return [Problem(
        "monotone", part, stage, detail, tuple(sizes[j] for j in bad), repaired_at_prediction=True,
        blocking=times[i] >= STALL_SHAPED_FACTOR * later_min[i + 1],
    )]


def _jumps(sizes, moved, times, cache: int | None, stage: str, part: str, unit) -> list[Problem]:
    """Points inside the last-level cache (and under ``FRESH_PAGES_BYTES``) that take more than
    ``JUMP_FACTOR`` times what a smaller point's time grows to in proportion to the bytes: such a
    kernel's time grows at most in proportion to its bytes, so a plateau of milliseconds over
    microsecond ops is stalls (each call waited for a scheduler tick), however monotone it is.
    Repaired at prediction when capping at the larger points' times (as prediction does) removes it."""
    if not cache:
        return []
    times = np.asarray(times, dtype=np.float64)
    capped = np.minimum.accumulate(times[::-1])[::-1]

    def jumped(ts):
        out, per_byte = [], np.inf  # the least time per byte of any smaller point
        for i, (b, t) in enumerate(zip(moved, ts)):
            if b <= min(cache, FRESH_PAGES_BYTES) and t > JUMP_FACTOR * per_byte * b and t - per_byte * b > MONOTONE_SLACK_S:
                out.append((i, t / (per_byte * b)))
            per_byte = min(per_byte, t / b)
        return out

    bad = jumped(times)
    if not bad:
        return []
    i, factor = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    return [Problem(
        "stall", part, stage, f"{unit(sizes[i])} took {_us(times[i])}, {factor:.0f}x what the smaller points' time per byte gives{more}",
        tuple(sizes[j] for j, _ in bad), repaired_at_prediction=not jumped(capped),
    )]


def _whole_curve(problems: list[Problem], sizes) -> list[Problem]:
    """Stalls are re-measured over the whole curve: the stretch of time that stalled one point may
    have slowed its neighbours less visibly, and a re-measured point changes what the next is judged by."""
    return [replace(p, points=tuple(sizes)) for p in problems]


def _stall(size, time_s: float, stage: str, part: str, unit) -> list[Problem]:
    if time_s <= STALL_S:
        return []
    return [Problem("stall", part, stage, f"the smallest point ({unit(size)}) took {_us(time_s)}; a tiny op takes microseconds", (size,))]


def _matmul_problems(curve, part: str, peak: float | None) -> list[Problem]:
    stage = f"matmul {curve.dtype}"
    grid = sorted(curve.grid)
    index = {g: i for i, g in enumerate(grid)}
    times = np.full((len(grid),) * 3, np.inf)
    for p in curve.points:
        times[index[p.m], index[p.n], index[p.k]] = p.time.median_s
    # fastest time at a shape at least as large in every dimension (suffix minimum along each axis)
    at_least = times.copy()
    for axis in range(3):
        at_least = np.flip(np.minimum.accumulate(np.flip(at_least, axis), axis), axis)
    problems = []
    smallest = min(curve.points, key=lambda p: p.m * p.n * p.k)
    problems += _stall((smallest.m, smallest.n, smallest.k), smallest.time.median_s, stage, part, lambda s: "x".join(map(str, s)))
    bad = []
    for p in curve.points:
        i, j, k = index[p.m], index[p.n], index[p.k]
        larger = [at_least[i + 1, j, k] if i + 1 < len(grid) else np.inf,
                  at_least[i, j + 1, k] if j + 1 < len(grid) else np.inf,
                  at_least[i, j, k + 1] if k + 1 < len(grid) else np.inf]
        bound = min(larger)
        if np.isfinite(bound) and _slower(p.time.median_s, bound):
            bad.append((p, bound))
    if bad:
        p, bound = max(bad, key=lambda x: x[0].time.median_s / x[1])
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        problems.append(Problem(
            "monotone", part, stage, f"{p.m}x{p.n}x{p.k} took {_us(p.time.median_s)}, longer than a larger product's {_us(bound)}{more}",
            tuple((q.m, q.n, q.k) for q, _ in bad), repaired_at_prediction=True,
            blocking=p.time.median_s >= STALL_SHAPED_FACTOR * bound,
        ))
    best = max(curve.points, key=lambda p: p.flop_per_s)
    top = grid[-1]
    corner = next(p for p in curve.points if (p.m, p.n, p.k) == (top, top, top))
    if len(grid) > 1 and corner.flop_per_s < TOP_RATE_SHARE * best.flop_per_s:
        problems.append(Problem(
            "matmul_rate", part, stage,
            f"{top}x{top}x{top} ran at {corner.flop_per_s / 1e9:.3g} GFLOP/s, under {100 * TOP_RATE_SHARE:.0f}% of the "
            f"{best.flop_per_s / 1e9:.3g} GFLOP/s of {best.m}x{best.n}x{best.k}: the large products were disturbed",
            ((top, top, top),),
        ))
    rates = [(p.flop_per_s, p) for p in [*curve.points, *curve.peak_probes]]
    fastest, p = max(rates, key=lambda x: x[0])
    if peak and fastest > RATE_CEILING * peak:
        problems.append(Problem(
            "matmul_rate", part, stage,
            f"{p.m}x{p.n}x{p.k} ran at {fastest / 1e12:.3g} TFLOP/s, above {RATE_CEILING}x the peak of {peak / 1e12:.3g} TFLOP/s",
            ((p.m, p.n, p.k),), too_fast=True,
        ))
    return problems


def _bandwidth_problems(curve, part: str, cache: int | None, peak: float | None) -> list[Problem]:
    stage = f"bandwidth {curve.kind}"
    points = curve.points
    sizes = [p.working_set_bytes for p in points]
    problems = _stall(sizes[0], points[0].time.median_s, stage, part, _mib)
    problems += _jumps(sizes, [p.bytes for p in points], [p.time.median_s for p in points], cache, stage, part, _mib)
    problems = _whole_curve(problems, sizes)
    problems += _monotone_points(sizes, [p.time.median_s for p in points], stage, part, _mib)
    dram = curve.dram_bytes_per_s(cache)
    low = MIN_DRAM_BYTES_PER_S[part]
    large = tuple(s for s in sizes if cache is None or s > cache) or (sizes[-1],)
    if dram < low:
        problems.append(Problem("dram_range", part, stage, f"DRAM {curve.kind} bandwidth {_gbs(dram)} is below {_gbs(low)}, slower than any memory", large))
    if peak and dram > RATE_CEILING * peak:
        problems.append(Problem("dram_range", part, stage, f"DRAM {curve.kind} bandwidth {_gbs(dram)} is above {RATE_CEILING}x the peak of {_gbs(peak)}", large, too_fast=True))
    if cache:
        beyond = sorted(p.bytes_per_s for p in points if p.working_set_bytes > cache)
        if beyond:
            reference, where = float(np.median(beyond)), f"the points beyond the {_mib(cache)} last-level cache"
        elif points[-1].bytes_per_s <= LEFT_CACHE_SHARE * curve.peak_bytes_per_s:  # it left the cache before its end
            reference, where = points[-1].bytes_per_s, "its largest point"
        else:
            reference, where = 0.0, f"anything measured beyond the {_mib(cache)} last-level cache (no point is)"
        if dram > CACHE_RATE_FACTOR * reference:
            problems.append(Problem(
                "dram_beyond_cache", part, stage,
                f"its DRAM figure {_gbs(dram)} runs {f'{dram / reference:.2g}x ' if reference else ''}faster than {where}: it is read partly in the cache",
                large,
            ))
        problems += _reaches_dram(stage, part, cache, sizes[-1], points[-1].bytes_per_s, curve.peak_bytes_per_s)
    return problems


def _reaches_dram(stage: str, part: str, cache: int, top_bytes: int, top_rate: float, peak_rate: float) -> list[Problem]:
    if top_bytes > cache or top_rate <= LEFT_CACHE_SHARE * peak_rate:
        return []
    return [Problem(
        "reaches_dram", part, stage,
        f"its largest point ({_mib(top_bytes)}) sits inside the {_mib(cache)} last-level cache at its cache rate: larger ops would be priced at it",
        (),
    )]


def _pointwise_problems(curve, part: str, cache: int | None) -> list[Problem]:
    stage = f"pointwise {curve.op} {curve.dtype}"
    points = curve.points
    sizes = [p.elements for p in points]
    problems = _stall(sizes[0], points[0].time.median_s, stage, part, lambda n: f"{n} elements")
    problems += _jumps(sizes, [p.bytes for p in points], [p.time.median_s for p in points], cache, stage, part, lambda n: f"{n} elements")
    problems = _whole_curve(problems, sizes)
    problems += _monotone_points(sizes, [p.time.median_s for p in points], stage, part, lambda n: f"{n} elements")
    if cache and curve.op in FAMILY_OPS:
        problems += _reaches_dram(stage, part, cache, points[-1].bytes, points[-1].bytes_per_s, curve.peak_bytes_per_s)
    return problems


def _overhead_problems(overheads, part: str) -> list[Problem]:
    problems = []
    for name, stat in (("dispatch of one op", overheads.dispatch_s), ("nn.Module call", overheads.module_call_s), ("tiny op", overheads.op_small_s)):
        if stat is not None and stat.median_s > STALL_S:
            problems.append(Problem("stall", part, "overheads", f"{name} took {_us(stat.median_s)}; it takes microseconds"))
    return problems


def check_part(part, kind: str) -> list[Problem]:
    """The problems of one part of a profile: ``kind`` is 'cpu' or 'gpu'."""
    meas = part.measurements
    cache = part.identity.l2_cache_bytes if kind == "gpu" else part.identity.l3_cache_bytes
    problems = []
    # Only a datasheet's peaks bound measurements: a derived CPU peak is a clock times a width,
    # which turbo clocks and wider units than the ISA flags tell exceed.
    datasheet = part.peaks.source.startswith("datasheet")
    for curve in meas.matmul:
        problems += _matmul_problems(curve, kind, part.peaks.flop_per_s.get(curve.dtype) if datasheet else None)
    for curve in meas.bandwidth:
        problems += _bandwidth_problems(curve, kind, cache, part.peaks.memory_bytes_per_s if datasheet else None)
    for curve in meas.pointwise:
        problems += _pointwise_problems(curve, kind, cache)
    problems += _overhead_problems(meas.overheads, kind)
    return problems


def check_profile(profile: DeviceProfile) -> list[Problem]:
    """Every problem of the profile, GPU part first."""
    problems = check_part(profile.gpu, "gpu") if profile.gpu is not None else []
    return problems + check_part(profile.host, "cpu")


def profile_caveats(profile: DeviceProfile, part: str | None = None) -> list[str]:
    """What a report must say about its profile: a quick one, one that fails its checks (those
    prediction does not repair), one made on a busy machine. Empty for a sound profile. ``part``
    ('cpu', 'cuda' or 'gpu') limits the checks to the part a report predicts; None checks both."""
    name = profile.name
    out = []
    cal = profile.calibration
    if cal.quick:
        out.append(
            f"profile '{name}' is a quick one (roofline calibrate --quick: a reduced grid of sizes); "
            "calibrate without --quick for figures to stand behind"
        )
    if part is None:
        problems = check_profile(profile)
    elif part == "cpu":
        problems = check_part(profile.host, "cpu")
    else:
        problems = check_part(profile.gpu, "gpu") if profile.gpu is not None else []
    problems = [p for p in problems if not p.repaired_at_prediction]
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        forced = " and was saved with --force" if cal.forced else ""
        out.append(f"profile '{name}' fails its sanity checks{forced}: {problems[0]}{more}; recalibrate on a quiet machine (roofline calibrate)")
    elif cal.forced and cal.checks_failed:
        out.append(f"profile '{name}' was saved with --force failing its sanity checks: {cal.checks_failed[0]}; recalibrate on a quiet machine")
    if cal.load is not None and cal.load.busy:
        reason = cal.load.busy_reasons[0] if cal.load.busy_reasons else "the machine was busy"
        out.append(
            f"profile '{name}' was calibrated on a busy machine ({reason}); its figures may be slow: "
            "recalibrate when other programs are closed"
        )
    return out
