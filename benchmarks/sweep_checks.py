"""What the sweep checks share: a sweep's points of one family, a callable's kernel time priced on
meta tensors (or one hand-built op's), each point's line and one line of their errors.

The checks (``addmm_grid_check.py``, ``conv_channels_check.py``, ``conv_backward_check.py``, ``conv3d_check.py``,
``foreach_check.py``, ``attention_lengths_check.py``, ``cat_inputs_check.py``) price the points ``mechanism_sweep.py``
recorded with a profile.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Callable

import torch

from roofline.costs import cost_of
from roofline.model.device import DeviceModel
from roofline.model.kernels import kernel_s as _op_kernel_terms
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file

REPO = Path(__file__).resolve().parent.parent

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def sweep_points(path: str | Path, family: str) -> list[dict]:
    """The points of one family (``conv_channels``, ``addmm_grid``, ...) of a recorded sweep (JSON, or
    gzipped JSON named ``.gz``)."""
    path = Path(path)
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [p for p in json.loads(text)["points"] if p["family"] == family]


def error_line(errors: list[float]) -> str:
    """n, median and p90 of |error| (p90: the value at 90% of the sorted list), and the signed median."""
    a = sorted(abs(e) for e in errors)
    return (f"n={len(a):3d} median {100 * statistics.median(a):5.1f}%, p90 {100 * a[int(0.9 * (len(a) - 1))]:5.1f}%, "
            f"signed median {100 * statistics.median(errors):+6.1f}%")


def kernel_s(fn: Callable, inputs: tuple, profile) -> float:
    """The GPU kernel time ``roofline advise`` predicts for ``fn`` on ``inputs`` (meta tensors,
    captured on the CPU) with ``profile``."""
    options = Options(device="cuda", capture_device="cpu", batch_sweep=False)
    a = Analysis.of(fn, inputs, None, profile, options, devices=_devices(profile, options))
    return sum(k[0] for k in a.kernels())


_LAST_DEVICES: list = [None, None]  # (profile, its device models): the last profile priced


def _devices(profile, options: Options) -> dict:
    """The profile's GPU model, built once for the run of points a check prices with it (building one
    reads every curve of the profile); a check that changes a profile prices with a changed copy, a new
    object, which builds its own."""
    if _LAST_DEVICES[0] is not profile:
        _LAST_DEVICES[:] = [profile, {"cuda": DeviceModel(profile.gpu, "cuda", options.modes())}]
    return _LAST_DEVICES[1]


def op_kernel_s(op, dev) -> float:
    """The kernel time ``roofline advise`` predicts for one captured op (built by hand from a sweep
    point's shapes) on a device model."""
    cost, supported = cost_of(op)
    assert supported, op.name
    return _op_kernel_terms(op, cost, dev)[0]


def priced_lines(points: list[dict], predicted_s: Callable[[dict], float], describe: Callable[[dict], str]) -> list[float]:
    """Print each point's predicted and measured time and its error, named by ``describe``; the errors."""
    errors = []
    for p in points:
        t = predicted_s(p)
        errors.append(t / p["median_s"] - 1)
        print(f"  {describe(p)}: predicted {t * 1e6:8.1f} us  measured {p['median_s'] * 1e6:8.1f} us  {100 * errors[-1]:+6.1f}%")
    return errors


def check_parser(doc: str, sweep_file: str) -> argparse.ArgumentParser:
    """A check's command line: ``--sweep`` (default the H100's ``benchmarks/results/<sweep_file>``) and
    ``--profile`` (default the shipped H100 profile); the check adds its own flags."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", default=str(REPO / "benchmarks" / "results" / sweep_file))
    ap.add_argument("--profile", default=str(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"))
    return ap


def print_check(args: argparse.Namespace, family: str, predicted_s: Callable, describe: Callable[[dict], str]) -> int:
    """Price ``family``'s points of ``args.sweep`` with ``args.profile`` (``predicted_s(profile, point)``),
    print each point's line and their errors' line."""
    profile = load_profile_file(Path(args.profile))
    print(error_line(priced_lines(sweep_points(args.sweep, family), lambda p: predicted_s(profile, p), describe)))
    return 0


def time_points(path: str | Path, points: list[dict], call_of: Callable[[dict], Callable], describe: Callable[[dict], str],
                budget_s: float = 0.05, kernels: bool = False, clock_of: Callable[[dict], str] | None = None) -> None:
    """On the GPU: time each point's call (``call_of(point)``, a callable of no arguments) by the
    shared protocol, on the clock ``clock_of(point)`` names (default the device's), print it, and
    write the points with their medians (and, with ``kernels``, the kernels each call ran) to
    ``path``, with the device and torch version."""
    from roofline.timing import time_fn

    if kernels:
        from benchmarks.mechanism_sweep import kernel_names
    timed = []
    for p in points:
        fn = call_of(p)
        clock = clock_of(p) if clock_of else None
        t = time_fn(fn, device="cuda", clock=clock, inner=1 if clock == "host" else None, budget_s=budget_s, label=describe(p)).stat()
        extra = {}
        if kernels:
            extra["kernels"] = kernel_names(fn, "cuda")
        timed.append(dict(p, median_s=t.median_s, **extra))
        print(f"{describe(p)}: {t.median_s * 1e6:9.1f} us", flush=True)
    Path(path).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, points=timed), indent=1))


def timed_check_main(doc: str, name: str, points: Callable[..., list[dict]], call_of: Callable[[dict], Callable],
                     predicted_s: Callable, describe: Callable[[dict], str], budget_s: float = 0.05, kernels: bool = False,
                     add_args: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """The command line of a check that times its points on the GPU and prices a record of them:
    ``--measure OUT.json`` (``time_points``, recording the kernels each point ran with ``kernels`` or
    a ``--kernels`` flag of the check's), ``--sweep OUT.json [--profile P]`` (each point's line and
    one line of their errors, ``predicted_s(profile, point)``). ``add_args`` adds the check's own
    flags; its ``points`` then takes the parsed arguments."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--sweep", metavar="OUT.json")
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    if add_args:
        add_args(ap)
    args = ap.parse_args()
    if args.measure:
        time_points(args.measure, points(args) if add_args else points(), call_of, describe, budget_s,
                    kernels or getattr(args, "kernels", False))
    if args.sweep:
        from roofline.pipeline import resolve_profile

        profile, _ = resolve_profile(args.profile, "cuda")
        recorded = json.loads(Path(args.sweep).read_text())["points"]
        print(f"{name}: " + error_line(priced_lines(recorded, lambda p: predicted_s(profile, p), describe)))
    return 0


def refused_without_cuda(script: str) -> bool:
    """Whether a probe's ``--measure`` must refuse here: torch sees no CUDA GPU (one line says so, and
    that ``--show`` reads a recorded run anywhere)."""
    if torch.cuda.is_available():
        return False
    print(f"{script} --measure needs a CUDA GPU; --show RECORD prints a recorded run", file=sys.stderr)
    return True


def record_check_main(doc: str, measure: Callable[[Path], None], check: Callable[[Path], int | None],
                      sweep: Callable[[Path, str], int] | None = None, read_flag: str = "check") -> int:
    """The command line of a probe that records on the GPU and reads the record anywhere:
    ``--measure OUT.json``, ``--check OUT.json`` (or ``--READ_FLAG``: ``--show`` for a probe that prints
    its record) and, with ``sweep``, ``--sweep OUT.json [--profile P]`` (the record's timed points priced)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument(f"--{read_flag}", dest="check", metavar="OUT.json")
    if sweep:
        ap.add_argument("--sweep", metavar="OUT.json")
        ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    args = ap.parse_args()
    if args.measure:
        measure(Path(args.measure))
    if args.check:
        return check(Path(args.check)) or 0
    if sweep and args.sweep:
        return sweep(Path(args.sweep), args.profile)
    return 0
