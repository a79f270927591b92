"""The kernels of fused native ops (nn.MultiheadAttention's and nn.TransformerEncoderLayer's inference fast
paths), of SDPA with an additive bias, and of a small-table gather, against the parts the model prices.

    python benchmarks/fastpath_kernels.py --measure OUT.json      (on the GPU)
    python benchmarks/fastpath_kernels.py --show RECORD.json [--profile P]

The zoo's half-precision fast paths (torchvision's ViTs, nn.MultiheadAttention, nn.TransformerEncoderLayer)
came out 35-66% over per op while their float32 twins sat within 12% (the kernels showed three where the
model priced five: ``roofline.costs.attention.SDPA_HEAD_MULTIPLE``), and BEiT's half-precision SDPA with
its relative-position bias ran 2.3x the same SDPA without one. ``--measure`` times each case with the
shared protocol (device clock) and records every kernel one call runs with its duration (torch.profiler);
``--show`` prints, per case, the measured kernels beside the parts the model prices (``OpCost.parts`` of
the captured op, each at its own price) and the op's total.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from roofline.costs import cost_of  # noqa: E402
from roofline.model.kernels import kernel_s  # noqa: E402
from roofline.pipeline import Analysis, Options  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16}


def cases(device: str) -> dict[str, tuple]:
    """Case name -> a factory of (a function, its inputs), built on ``device`` (the CPU for pricing: the
    capture makes them fake)."""
    out = {}
    for dtype_name, dtype in DTYPES.items():
        for name, (batch, length, embed, heads) in {"vit_b_16": (32, 197, 768, 12), "vit_b_32": (32, 50, 768, 12),
                                                     "mha_512": (8, 256, 512, 8)}.items():
            def make(batch=batch, length=length, embed=embed, heads=heads, dtype=dtype):
                mha = torch.nn.MultiheadAttention(embed, heads, batch_first=True, device=device, dtype=dtype).eval()
                x = torch.randn(batch, length, embed, device=device, dtype=dtype)
                return (lambda x: mha(x, x, x, need_weights=False)[0]), (x,)
            out[f"native MHA {name} {dtype_name}"] = make

        def encoder(dtype=dtype):
            layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, device=device, dtype=dtype).eval()
            x = torch.randn(8, 128, 512, device=device, dtype=dtype)
            return layer, (x,)
        out[f"encoder layer 512 {dtype_name}"] = encoder

        for bias in ("broadcast", "full"):
            def sdpa(bias=bias, dtype=dtype):
                shape = (32, 12, 197, 64)
                q, k, v = (torch.randn(shape, device=device, dtype=dtype) for _ in range(3))
                b_shape = (1, 12, 197, 197) if bias == "broadcast" else (32, 12, 197, 197)
                mask = torch.randn(b_shape, device=device, dtype=dtype)
                return (lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m)), (q, k, v, mask)
            out[f"SDPA 32x12x197x64 {bias} bias {dtype_name}"] = sdpa

    def gather():
        table = torch.randn(732, 12, device=device)
        index = torch.randint(0, 732, (38809,), device=device)
        return (lambda t, i: t[i]), (table, index)
    out["index 732x12 by 38809"] = gather
    return out


def measure(path: str) -> None:
    from torch.profiler import ProfilerActivity, profile

    from roofline.timing import time_fn

    rows = []
    with torch.no_grad():
        for name, make in cases("cuda").items():
            fn, inputs = make()
            t = time_fn(lambda: fn(*inputs), device="cuda", budget_s=0.2, label=name)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn(*inputs)
                torch.cuda.synchronize()
            kernels = [(e.name[:120], e.device_time_total * 1e-6) for e in prof.events() if e.device_type.name == "CUDA"]
            rows.append(dict(case=name, median_s=t.median_s, kernels=kernels))
            print(f"{name:<40} {t.median_s * 1e6:8.1f} us  {len(kernels)} kernels")
    Path(path).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), indent=1))


def analysis_of(case: str, profile) -> Analysis:
    """One recorded case captured on the CPU and priced for ``profile``'s GPU."""
    fn, inputs = cases("cpu")[case]()
    return Analysis.of(fn, inputs, None, profile, Options(device="cuda", capture_device="cpu", batch_sweep=False))


def priced_s(case: str, profile) -> float:
    """The model's device time of one recorded case: its kernels' prices summed."""
    return sum(k[0] for k in analysis_of(case, profile).kernels())


def show(path: str, profile_path: str) -> None:
    record = json.loads(Path(path).read_text())
    profile = load_profile_file(Path(profile_path))
    print(f"{record['device']}, torch {record['torch']}; priced with {Path(profile_path).name}")
    for row in record["rows"]:
        a = analysis_of(row["case"], profile)
        dev = a.dev
        total = sum(k[0] for k in a.kernels())
        print(f"{row['case']}: measured {row['median_s'] * 1e6:.1f} us (kernels {sum(d for _, d in row['kernels']) * 1e6:.1f} us), "
              f"priced {total * 1e6:.1f} us ({100 * (total / row['median_s'] - 1):+.0f}% of the call, "
              f"{100 * (total / sum(d for _, d in row['kernels']) - 1):+.0f}% of its kernels)")
        for kname, d in row["kernels"]:
            print(f"    measured {d * 1e6:7.1f} us  {kname[:90]}")
        for op in a.graph.ops:
            cost, _ = cost_of(op)
            for p_op, p_cost in (cost.parts or [(op, cost)]):
                t = kernel_s(p_op, p_cost, dev)[0]
                if t:
                    print(f"    priced   {t * 1e6:7.1f} us  {p_op.name} {[list(x.shape) for x in p_op.tensor_inputs()][:3]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", metavar="OUT")
    ap.add_argument("--show", metavar="RECORD")
    ap.add_argument("--profile", default=str(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json"))
    args = ap.parse_args()
    if not (args.measure or args.show):
        ap.error("pass --measure OUT (on the GPU) or --show RECORD")
    if args.show and not Path(args.show).is_file():
        ap.error(f"{args.show} does not exist; pass a record written by --measure")
    if args.measure:
        measure(args.measure)
    if args.show:
        show(args.show, args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
