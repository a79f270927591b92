"""The host time of issuing one GPU convolution (and batch norm), by dtype, layout and shape.

    python benchmarks/conv_host_cost.py --measure OUT.json [--grouped]    # on the GPU
    python benchmarks/conv_host_cost.py --show OUT.json [--profile P]   # anywhere: the table

Each case's op is called as a model calls it (``F.conv2d``, ``F.batch_norm`` in eval) with the
GPU held busy by a spin kernel, so the wall time of issuing 8 calls is the host's alone (no wait
for the device, no full launch queue); the median of 9 repetitions per call. The representative
ops of ``roofline.hostmix`` (a tiny float32 conv2d, a tiny add) are timed the same way every 12
cases; ``--show`` reads each case against the conv2d's median over the run. After every case is timed (a
profiler session slows later launches), one profiled call per case records the kernels it runs:
half-precision NCHW convolutions often run cuDNN's layout transforms around the conv kernel.
``--grouped`` measures grouped convolutions instead (``GROUPED``: 2-d 3x3 and 1-d 1x1, NCHW, float32
and float16, over group counts and widths), where cuDNN may run one launch per group.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import DTYPES  # noqa: E402

DTYPE_ORDER = ("float32", "float16", "bfloat16")  # the recorded cases' order
# (batch, in channels, side, out channels, filter, stride, groups), from the zoo's CNNs
CONVS = [
    (32, 64, 56, 64, 3, 1, 1), (32, 128, 28, 128, 3, 1, 1), (32, 256, 14, 256, 3, 1, 1), (32, 512, 7, 512, 3, 1, 1),
    (32, 64, 56, 256, 1, 1, 1), (32, 256, 56, 64, 1, 1, 1), (32, 3, 224, 64, 7, 2, 1), (32, 128, 56, 128, 3, 2, 1),
    (32, 24, 56, 144, 1, 1, 1), (32, 144, 56, 144, 3, 1, 144), (32, 16, 112, 16, 3, 1, 16), (32, 504, 1, 42, 1, 1, 1),
    (32, 168, 28, 168, 3, 1, 7),
    (1, 64, 56, 64, 3, 1, 1), (1, 256, 14, 256, 3, 1, 1), (1, 24, 56, 144, 1, 1, 1), (1, 144, 56, 144, 3, 1, 144),
]
NORMS = [(32, 64, 56), (32, 256, 14), (1, 64, 56)]
# grouped: (groups, width a group) for a 2-d 3x3 over a 28 x 28 plane and a 1-d 1x1 over 128 positions, batch 8
GROUPED = [(g, w) for g in (2, 4, 8, 16, 32) for w in (4, 8, 16, 32, 64, 128, 192)]
LAYOUTS = ("nchw", "channels_last")
CALLS, REPS, SPIN_CYCLES = 8, 9, 12_000_000  # the spin: ~7 ms, well past 8 issues


def _grouped_cases() -> list[dict]:
    cases = []
    for dtype in ("float32", "float16"):
        for g, w in GROUPED:
            cases.append(dict(op="conv", dtype=dtype, layout="nchw", shape=[8, g * w, 28, g * w, 3, 1, g]))
            cases.append(dict(op="conv1d", dtype=dtype, layout="nchw", shape=[8, g * w, 128, g * w, 1, 1, g]))
    return cases


def _cases() -> list[dict]:
    cases = []
    for dtype in DTYPE_ORDER:
        for layout in LAYOUTS:
            cases += [dict(op="conv", dtype=dtype, layout=layout, shape=list(c)) for c in CONVS]
            cases += [dict(op="batch_norm", dtype=dtype, layout=layout, shape=list(n)) for n in NORMS]
    return cases


def _call(case: dict):
    dtype, fmt = DTYPES[case["dtype"]], torch.channels_last if case["layout"] == "channels_last" else torch.contiguous_format
    if case["op"] == "conv1d":
        n, c, length, cout, k, s, g = case["shape"]
        x = torch.randn(n, c, length, device="cuda", dtype=dtype)
        w = torch.randn(cout, c // g, k, device="cuda", dtype=dtype)
        return lambda: F.conv1d(x, w, None, s, k // 2, 1, g)
    if case["op"] == "conv":
        n, c, side, cout, k, s, g = case["shape"]
        x = torch.randn(n, c, side, side, device="cuda", dtype=dtype).to(memory_format=fmt)
        w = torch.randn(cout, c // g, k, k, device="cuda", dtype=dtype).to(memory_format=fmt)
        return lambda: F.conv2d(x, w, None, s, k // 2, 1, g)
    n, c, side = case["shape"]
    x = torch.randn(n, c, side, side, device="cuda", dtype=dtype).to(memory_format=fmt)
    mean, var, wb = (torch.zeros(c, device="cuda", dtype=dtype), torch.ones(c, device="cuda", dtype=dtype),
                     torch.ones(c, device="cuda", dtype=dtype))
    return lambda: F.batch_norm(x, mean, var, wb, wb, False)


def issue_s(fn) -> tuple[float, int]:
    """Median host seconds per call of issuing ``fn`` behind a spin kernel, and how many
    repetitions the device caught up in (their issue may have waited)."""
    per_call, caught = [], 0
    for _ in range(REPS):
        torch.cuda.synchronize()
        torch.cuda._sleep(SPIN_CYCLES)
        spun = torch.cuda.Event()
        spun.record()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        per_call.append((time.perf_counter() - t0) / CALLS)
        caught += spun.query()
    torch.cuda.synchronize()
    return statistics.median(per_call), caught


def kernels_of(fn) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name[:60] for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def measure(out: Path, grouped: bool = False) -> None:
    from roofline.hostmix import representative_ops

    reference = representative_ops("cuda")
    cases, references = (_grouped_cases() if grouped else _cases()), []
    calls = [_call(c) for c in cases]
    for fn in calls + [reference["conv2d"], reference["add"]]:
        for _ in range(3):  # cuDNN's plan for a new shape is built on its first call
            fn()
    torch.cuda.synchronize()
    for i, (case, fn) in enumerate(zip(cases, calls)):
        if i % 12 == 0:
            references.append({name: issue_s(reference[name])[0] for name in ("conv2d", "add")})
        case["host_s"], case["caught_up"] = issue_s(fn)
        print(f"{_label(case)}: {case['host_s'] * 1e6:6.1f} us", flush=True)
    references.append({name: issue_s(reference[name])[0] for name in ("conv2d", "add")})
    for case, fn in zip(cases, calls):
        case["kernels"] = kernels_of(fn)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, references=references,
                                   cases=cases), indent=1))


def _label(case: dict) -> str:
    return f"{case['op']:<10} {case['dtype']:<8} {case['layout']:<13} {'x'.join(map(str, case['shape']))}"


def show(path: Path, profile_name: str | None) -> None:
    record = json.loads(path.read_text())
    refs = record["references"]
    dispatch = None
    if profile_name:
        from roofline.pipeline import resolve_profile

        profile, _ = resolve_profile(profile_name, "cuda")
        dispatch = profile.gpu.measurements.overheads.dispatch_by_op_s
    # the reference's median over the run: a single reading can be a stall (one read 10x the others)
    ref = statistics.median(r["conv2d"] for r in refs)
    print(f"{record['device']}, torch {record['torch']}; host us per call, and over the tiny float32 conv2d's median "
          f"({ref * 1e6:.1f} us)")
    for case in record["cases"]:
        names = [k for k in case["kernels"]]
        line = f"{_label(case):<58} {case['host_s'] * 1e6:6.1f} us  x{case['host_s'] / ref:4.2f}  {len(names)} kernels"
        if dispatch and case["op"] in ("conv", "conv1d", "batch_norm"):
            priced = dispatch["batch_norm" if case["op"] == "batch_norm" else "conv2d"].median_s
            line += f"  (profile prices {priced * 1e6:5.1f} us)"
        print(line + "  " + "; ".join(n[:28] for n in names))
    by = {}
    for case in record["cases"]:
        by.setdefault((case["op"], case["dtype"], case["layout"]), []).append(case["host_s"] / ref)
    convs = [c for c in record["cases"] if c["op"] in ("conv", "conv1d")]
    if len(convs) > 2:  # host time against the kernels the call launched: a time per call plus one per launch
        kernels = [len(c["kernels"]) - 1 for c in convs]
        host = [c["host_s"] for c in convs]
        per_kernel, base = statistics.linear_regression(kernels, host)
        residual = statistics.median(abs(h - base - per_kernel * k) for k, h in zip(kernels, host))
        print(f"convolutions: host {base * 1e6:.1f} us + {per_kernel * 1e6:.2f} us per kernel past the first "
              f"(median residual {residual * 1e6:.1f} us over {len(convs)})")
    print("median over shapes, x the tiny float32 conv2d's median:")
    for key, ratios in by.items():
        print(f"  {' '.join(key):<40} x{statistics.median(ratios):4.2f} (x{min(ratios):4.2f}-x{max(ratios):4.2f})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--show", metavar="OUT.json")
    ap.add_argument("--profile")
    ap.add_argument("--grouped", action="store_true", help="with --measure: the grouped convolutions (GROUPED) instead")
    args = ap.parse_args()
    if args.measure:
        measure(Path(args.measure), args.grouped)
    if args.show:
        show(Path(args.show), args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
