"""Whether calibration reads the host-speed index as a model's run later reads it, on one GPU host.

    python benchmarks/host_index_probe.py --measure OUT.json      (GPU)
    python benchmarks/host_index_probe.py --show OUT.json ...     (no GPU needed)
    python benchmarks/host_index_probe.py --samples PROFILE ...   (a calibrated profile's host samples)

Every own-profile zoo record ran its models' host at x0.59-x0.97 of the host speed its profile's
calibration implied (``host_scale`` in ``benchmarks/results/h100_*_own.json``, ``h100_heldout_s41``,
``_session``, ``_session2``, ``h100_zoo``), and the shipped profiles' host levels sit at x0.76 (H100)
and x0.49 (H200) of their calibrations': calibration reads the host slower than runs do. This
probe times, in one process and in cycles, each way the index is read:

- ``lap``: as calibration's runner sampled it after each stage (``index_sample_s``: one untimed
  pass of the mix, then one sample), after a stage of convolution timings;
- ``warm_lap``: the same after ``INDEX_WARM_PASSES`` untimed passes, as the runner samples now;
- ``stage``: samples around the overheads stage (three before, three after; without the warm-up);
- ``implied``: the index the stage's measurements imply (``calibrated_index_s``: interleaving
  factor x the ops' dispatch costs), which a profile records;
- ``beside``: as ``--measure`` and the zoo read it, in rounds alternating with a host-bound model
  (``host_speed_beside``);
- ``read``: as ``--host now`` reads it (``read_host_speed``: the index alone for a quarter second);
- ``implied_more``: the index the dispatch stage implies when its budget is spread over ``MORE_ROUNDS``
  shorter rounds, with the interleaving factor of each reading (``interleave``, ``interleave_more``).
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CYCLES = 6
MORE_ROUNDS = 15  # the dispatch stage in shorter rounds (calibrate.overhead.ROUNDS: 5)
CONV_STAGE_SHAPES = [(32, 64, 64, 56, 3, 1, 1), (32, 128, 128, 28, 3, 1, 1), (8, 256, 256, 14, 3, 1, 1), (32, 256, 64, 56, 1, 1, 0)]


def _model(device: str):
    """A host-bound model: 24 blocks of Linear, LayerNorm and GELU over one row."""
    layers = []
    for _ in range(24):
        layers += [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers).to(device).eval()
    x = torch.randn(1, 256, device=device)

    def call():
        model(x)
        if device.startswith("cuda"):
            torch.cuda.synchronize()

    return call


def _conv_stage(device: str) -> None:
    """A stand-in for one of calibration's stages: its convolution points timed as it times them."""
    from calibrate.conv import measure_conv

    shapes = [(b, cin, cout, side, k, s, p) for b, cin, cout, side, k, s, p in CONV_STAGE_SHAPES]
    measure_conv("float16", [_conv_shape(*s) for s in shapes], device, budget_s=0.05, warnings=[])


def _conv_shape(batch, cin, cout, side, kernel, stride, padding):
    from calibrate.conv import ConvShape

    return tuple(ConvShape(batch=batch, in_channels=cin, out_channels=cout, size=side, kernel=kernel, stride=stride, padding=padding))


def measure(out: Path, device: str = "cuda", cycles_n: int = CYCLES) -> None:
    from calibrate.overhead import measure_dispatch, measure_overheads
    from roofline.measure.host_speed import INDEX_WARM_PASSES, host_speed_beside, index_call, index_sample_s, read_host_speed
    from roofline.model.host import calibrated_index_s

    model = _model(device)
    mix = index_call(device)
    cycles = []
    with torch.no_grad():
        for cycle in range(cycles_n):
            # one lap of each kind a cycle, their order alternating from cycle to cycle
            lap, warm = [], []
            for kind in (("cold", "warm") if cycle % 2 == 0 else ("warm", "cold")):
                _conv_stage(device)
                if kind == "cold":
                    lap.append(index_sample_s(mix))
                else:
                    warm.append(index_sample_s(mix, warm_passes=INDEX_WARM_PASSES))
            before = [index_sample_s(mix) for _ in range(3)]
            overheads = measure_overheads(device, budget_s=0.05, warnings=[])
            after = [index_sample_s(mix) for _ in range(3)]
            implied = calibrated_index_s(overheads)
            # the dispatch stage's own reading in more, shorter rounds (same budget)
            by_op, interleave_more = measure_dispatch(device, budget_s=0.05, warnings=[], rounds=MORE_ROUNDS)
            implied_more = calibrated_index_s(overheads.model_copy(update=dict(dispatch_by_op_s=by_op, interleave_factor=interleave_more)))
            _, beside = host_speed_beside(model, device, overheads)
            read = read_host_speed(device, overheads)
            row = dict(lap_s=lap, warm_lap_s=warm, stage_s=before + after, implied_s=implied, beside_s=beside.index_now_s, read_s=read.index_now_s,
                       interleave=overheads.interleave_factor, implied_more_s=implied_more, interleave_more=interleave_more, time=time.time())
            cycles.append(row)
            print(f"cycle {cycle}: lap {1e6 * statistics.median(lap):6.1f}  warm lap {1e6 * warm[0]:6.1f}  stage {1e6 * statistics.median(before + after):6.1f}  "
                  f"implied {1e6 * implied:6.1f}  beside {1e6 * beside.index_now_s:6.1f}  read {1e6 * read.index_now_s:6.1f} us "
                  f"(interleave {overheads.interleave_factor:.2f}; in {MORE_ROUNDS} rounds {interleave_more:.2f}, implied {1e6 * implied_more:6.1f})", flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name() if device.startswith("cuda") else "cpu", torch=torch.__version__, cycles=cycles), indent=1))


def show(path: Path) -> list[dict]:
    """Print a recorded run, cycle by cycle; return its cycles."""
    data = json.loads(path.read_text())
    print(f"{path.name}: {data['device']}, torch {data['torch']}; one pass of the index, us")
    keys = ("lap", "warm_lap", "stage", "implied", "beside", "read")
    print("cycle " + " ".join(f"{k:>8s}" for k in keys) + "   beside/implied  beside/stage  lap/stage  warm lap/stage")
    ratios = []
    for i, c in enumerate(data["cycles"]):
        v = {k: (statistics.median(c[f"{k}_s"]) if isinstance(c[f"{k}_s"], list) else c[f"{k}_s"]) for k in keys}
        ratios.append((v["beside"] / v["implied"], v["beside"] / v["stage"], v["lap"] / v["stage"], v["warm_lap"] / v["stage"]))
        print(f"{i:5d} " + " ".join(f"{1e6 * v[k]:8.1f}" for k in keys) + "   " + "  ".join(f"{r:12.2f}" for r in ratios[-1]))
    names = ("beside/implied", "beside/stage", "lap/stage", "warm lap/stage")
    print("medians: " + ", ".join(f"{n} {statistics.median(r[j] for r in ratios):.2f}" for j, n in enumerate(names)))
    if all("interleave_more" in c for c in data["cycles"]):
        for key, implied in (("interleave", "implied_s"), ("interleave_more", "implied_more_s")):
            values = [c[key] for c in data["cycles"]]
            off = [abs(math.log(c["beside_s"] / c[implied])) for c in data["cycles"]]
            print(f"{key:16s} {' '.join(f'{v:.2f}' for v in values)}  (median {statistics.median(values):.2f}); "
                  f"beside against its implied index: median |log| {statistics.median(off):.3f}, max {max(off):.3f}")
    return data["cycles"]


def pooled(cycles: list[dict]) -> None:
    """The records' cycles together: the index beside a model over the one the stage implies, the
    stage's interleaving factor, and a sample right after a stage over a warmed one."""
    beside = [c["beside_s"] / c["implied_s"] for c in cycles]
    interleave = [c["interleave"] for c in cycles]
    print(f"{len(cycles)} cycles: beside / implied x{min(beside):.2f}-x{max(beside):.2f} (median x{statistics.median(beside):.2f}); "
          f"the stage's interleaving factor {min(interleave):.2f}-{max(interleave):.2f} (median {statistics.median(interleave):.2f})")
    paired = [statistics.median(c["lap_s"]) / c["warm_lap_s"][0] for c in cycles if c.get("warm_lap_s")]
    if paired:
        print(f"{len(paired)} cycles with both: a sample right after a stage over a warmed one x{statistics.median(paired):.2f} (median), "
              f"slower in {sum(r > 1 for r in paired)} of {len(paired)}")


def samples(path: Path) -> None:
    """A calibrated profile's host samples (``Overheads.host_index_s``): the run's level
    (``calibrate.runner.host_phase``), the samples' own ratio of the mix to the ops alone against the
    stage's interleaving factor, and what the samples took of the calibration's time."""
    from calibrate.runner import host_phase
    from roofline.profiles import load_profile_file

    profile = load_profile_file(path)
    ov = profile.gpu.measurements.overheads if profile.gpu is not None else None
    hi = ov.host_index_s if ov is not None else {}
    outside = profile.calibration.duration_s - sum(profile.calibration.stage_seconds.values())
    if not hi.get("run_alone"):
        print(f"{path.name}: no samples of the ops alone; calibration's time outside its stages {outside:.1f} s")
        return
    ratio = statistics.median(m / a for m, a in zip(hi["run"], hi["run_alone"]))
    level = host_phase(hi, ov) if ov.host_phase_factor == 1.0 else None
    level_text = f"x{level:.2f} (not applied)" if level is not None else f"x{ov.host_phase_factor:.2f} (applied)"
    print(f"{path.name}: {len(hi['run_alone'])} samples; level {level_text}; the samples' mix over the ops alone {ratio:.2f}, "
          f"the stage's interleaving factor {ov.interleave_factor:.2f}; calibration's time outside its stages {outside:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", type=Path, help="read the index every way on the GPU, write this JSON")
    ap.add_argument("--show", type=Path, nargs="+", help="print recorded runs, then their cycles pooled")
    ap.add_argument("--samples", type=Path, nargs="+", help="print calibrated profiles' host samples")
    ap.add_argument("--device", default="cuda", help="where to read it (cpu: a dry run of the probe itself)")
    ap.add_argument("--cycles", type=int, default=CYCLES)
    args = ap.parse_args()
    if args.measure:
        measure(args.measure, args.device, args.cycles)
    elif args.show:
        pooled([c for path in args.show for c in show(path)])
    elif args.samples:
        for path in args.samples:
            samples(path)
    else:
        ap.error("give --measure OUT.json (GPU), --show RECORD.json ... or --samples PROFILE ...")


if __name__ == "__main__":
    main()
