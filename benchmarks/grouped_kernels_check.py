"""Grouped convolutions of few groups and depthwise ones with channel multipliers: which cuDNN runs
group by group on slow kernels, how far the calibrated families' price is from them, and whether
the report flags them (``roofline.model.kernels.cudnn_may_loop_groups``).

    python benchmarks/grouped_kernels_check.py [--sweep benchmarks/results/h100_grouped_kernels.json] [--profile P] [--records R.json ...]

The sweep (``mechanism_sweep.py --only grouped_kernels`` on the GPU) times 3x3 NCHW convolutions of
2, 3, 4 and 8 groups of 16-48 channels over 28-112 pixels at stride 1 and 2, and depthwise ones with
multipliers 1, 2 and 4, in float32 (TF32) and float16, with the kernels each call ran. A call ran
"per group" when its main kernel launched once per group (FP32 ``f32f32_f32f32`` implicit GEMMs
between transposes, FFT or legacy ``implicit_convolve_sgemm`` kernels). For each kind of shape this
prints how many ran per group, the measured time over the price and their FLOP rate, and how many
the report flags. ``--records``: the ops the report flags in recorded zoo runs (``accuracy.py --zoo``
records, priced again with the profile), with their predicted and measured kernel times.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.sweep_checks import DTYPES, check_parser, sweep_points  # noqa: E402
from roofline.model.kernels import cudnn_may_loop_groups  # noqa: E402
from roofline.pipeline import Analysis, Options  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

SLOW_KERNELS = ("implicit_gemm_f32f32_f32f32", "fft2d_c2r", "implicit_convolve_sgemm")
MAIN_KERNELS = ("xmma", "cutlass", "Kernel2", "fft2d_c2r", "implicit_convolve_sgemm", "conv2d_grouped_direct", "conv_depthwise", "conv2d_c1")


def shapes(p: dict) -> tuple[tuple, tuple, int, int]:
    """(input shape, weight shape, stride, groups) of a sweep point."""
    if p["family"] == "grouped_few":
        c = p["groups"] * p["width"]
        return (p["batch"], c, p["side"], p["side"]), (c, p["width"], 3, 3), p["stride"], p["groups"]
    c = p["channels"]
    return (p["batch"], c, p["side"], p["side"]), (p["multiplier"] * c, 1, 3, 3), p["stride"], c


def per_group(p: dict) -> bool:
    """Whether the call ran a slow kernel once per group: FP32 implicit GEMMs (``implicit_gemm_f32f32_f32f32``;
    cuDNN's Winograd GEMMs are ``f32f32_f32f32`` too, at full speed),
    FFTs or the legacy ``implicit_convolve_sgemm``, launched as many times as groups or a multiple.
    (cuDNN also loops CUTLASS kernels over groups at full speed: those are not counted.)"""
    groups = shapes(p)[3]
    main = [k for k in p["kernels"] if any(m in k for m in MAIN_KERNELS)]
    slow = any(s in k for k in main for s in SLOW_KERNELS)
    return slow and len(main) >= groups > 1 and len(main) % groups == 0


def priced(profile, p: dict) -> tuple[float, bool]:
    """The profile's kernel time for the point (as ``roofline advise`` prices it) and whether the
    report flags it."""
    x_shape, w_shape, stride, groups = shapes(p)
    with torch.device("meta"):
        x = torch.empty(x_shape, dtype=DTYPES[p["dtype"]])
        w = torch.empty(w_shape, dtype=DTYPES[p["dtype"]])
    fn = lambda x, w: F.conv2d(x, w, None, stride, 1, 1, groups)  # noqa: E731
    a = Analysis.of(fn, (x, w), None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))
    return sum(k[0] for k in a.kernels()), any(a.uncertain)


def flop_per_s(p: dict) -> float:
    """FLOP/s of a sweep point (2 x multiply-accumulates over its time)."""
    (batch, c, side, _), (out, width, kh, kw), stride, _ = shapes(p)
    positions = (-(-side // stride)) ** 2
    return 2 * batch * out * positions * width * kh * kw / p["median_s"]


def flagged_in_records(paths: list[str], profile_path: str) -> None:
    """Each distinct flagged op of the records: case, shapes, predicted and measured kernel time."""
    import gzip
    import json

    from benchmarks.zoo.run import _replayed
    from roofline.pipeline import resolve_profile

    seen = set()
    for path in map(Path, paths):
        record = json.loads(path.read_text())
        profile, kind = resolve_profile(profile_path, record["kind"])
        with gzip.open(path.parent / record["graphs_file"], "rt") as f:
            graphs = json.load(f)["graphs"]
        options = Options(device=kind, allow_tf32=record["allow_tf32"], conv_tf32=record["conv_tf32"], batch_sweep=False)
        for old in record["rows"]:
            row, analysis, measured = _replayed(old, graphs, profile, kind, options, {})
            predicted = {o["i"]: o["predicted_s"] for o in row["ops"]}
            for i, why in enumerate(analysis.uncertain):
                op = analysis.graph.ops[i]
                if not why or why != cudnn_may_loop_groups(op) or not measured or not measured[i]:
                    continue
                key = (row["label"], str([list(t.shape) for t in op.tensor_inputs()[:2]]), str(op.args[3:5]))
                if key in seen:
                    continue
                seen.add(key)
                print(f"  {key[0]:<30} {key[1]} stride/padding {key[2]}: predicted {predicted[i] * 1e6:7.1f} us, "
                      f"measured {measured[i] * 1e6:7.1f} us ({measured[i] / predicted[i]:.1f}x)  [{path.name}]")


def main() -> int:
    ap = check_parser(__doc__, "h100_grouped_kernels.json")
    ap.add_argument("--records", nargs="*", default=[], help="zoo records whose flagged ops to list")
    args = ap.parse_args()
    profile = load_profile_file(Path(args.profile))
    kinds: dict[str, list] = {}
    for family in ("grouped_few", "depthwise_multiplier"):
        for p in sweep_points(args.sweep, family):
            t, flag = priced(profile, p)
            if family == "grouped_few":
                kind = f"grouped {p['dtype']} {'2-3' if p['groups'] <= 3 else '4-8'} groups"
            else:
                kind = f"depthwise {p['dtype']} multiplier {'1' if p['multiplier'] == 1 else '2-4'}"
            kinds.setdefault(kind, []).append((per_group(p), p["median_s"] / t, flag, flop_per_s(p)))
    for kind, rows in kinds.items():
        looped = [r for r in rows if r[0]]
        ratio = (f"measured / priced {statistics.median(r[1] for r in looped):.1f}x median, {min(r[1] for r in looped):.1f}-"
                 f"{max(r[1] for r in looped):.1f}x, {min(r[3] for r in looped) / 1e12:.2f}-{max(r[3] for r in looped) / 1e12:.2f} TFLOP/s"
                 if looped else "")
        flagged = [r for r in rows if r[2]]
        spread = f" (measured / priced {min(r[1] for r in flagged):.1f}-{max(r[1] for r in flagged):.1f}x)" if flagged else ""
        print(f"{kind:<34} {len(rows):3d} shapes, {len(looped):2d} ran per group {ratio:<66} flagged {len(flagged)}{spread}")
    if args.records:
        print("flagged ops of the records:")
        flagged_in_records(args.records, args.profile)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
