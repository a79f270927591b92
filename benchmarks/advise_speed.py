"""Speed and memory of `roofline advise` on a GPT-2-XL-sized model, beside FlopCounterMode.

    python benchmarks/advise_speed.py [--profile NAME|PATH] [--model examples/gpt2_xl.py]

Each measurement runs in a fresh subprocess so that its peak RSS is its own:
- roofline: load the model file on the meta device, capture under fake tensors, price every op,
  predict on the profile, build the report (everything `roofline advise` does but printing);
- FlopCounterMode: the same model built on the meta device, one forward under
  torch.utils.flop_counter.FlopCounterMode (counts FLOPs only: no bytes, no times, no regimes).
Prints wall time, peak RSS, FLOPs from each and the time ratio. Targets (issue 3): roofline
<= 10 s and <= 2 GB on the 2-core CI machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

ROOFLINE_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from roofline.pipeline import analyze
from roofline.graph.loading import load_model_file
t_import = time.perf_counter()
loaded = load_model_file(sys.argv[1], materialize=False)
t_load = time.perf_counter()
report = analyze(loaded.model, loaded.example_inputs, sys.argv[2], name=loaded.name, user_files=[loaded.path])
t_end = time.perf_counter()
print(json.dumps(dict(
    seconds=t_end - t_import, import_s=t_import - t0, load_s=t_load - t_import, analyze_s=t_end - t_load,
    peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    flops=report.total.flops, ops=report.total.ops,
    gemm_flops=sum(o.flops for o in report.ops if o.category in ("matmul", "conv", "attention")), predicted_s=report.total.predicted_s,
    unsupported=report.unsupported_ops,
)))
"""

FLOPCOUNTER_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import torch
from torch.utils.flop_counter import FlopCounterMode
from roofline.graph.loading import load_model_file
t_import = time.perf_counter()
loaded = load_model_file(sys.argv[1], materialize=False)   # built on the meta device: no memory
t_load = time.perf_counter()
model, inputs = loaded.model, loaded.example_inputs
with torch.no_grad(), FlopCounterMode(display=False) as counter:
    model.eval()(*inputs)
t_end = time.perf_counter()
print(json.dumps(dict(
    seconds=t_end - t_import, import_s=t_import - t0, load_s=t_load - t_import, analyze_s=t_end - t_load,
    peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    flops=counter.get_total_flops(),
)))
"""


def run_child(code: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(REPO / "examples" / "gpt2_xl.py"))
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each; the median is reported")
    args = ap.parse_args()

    import statistics

    ours = [run_child(ROOFLINE_CHILD, args.model, args.profile) for _ in range(args.repeat)]
    theirs = [run_child(FLOPCOUNTER_CHILD, args.model) for _ in range(args.repeat)]

    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    print(f"model: {args.model}; profile: {args.profile}; {args.repeat} fresh processes each; 'total s' excludes the imports column")
    print(f"{'':<22}{'imports s':>10}{'total s':>9}{'load s':>9}{'trace s':>9}{'peak RSS':>11}{'FLOPs':>12}")
    for name, rows in (("roofline analyze", ours), ("FlopCounterMode", theirs)):
        print(
            f"{name:<22}{med(rows, 'import_s'):>10.2f}{med(rows, 'seconds'):>9.2f}{med(rows, 'load_s'):>9.2f}{med(rows, 'analyze_s'):>9.2f}"
            f"{med(rows, 'peak_rss_bytes') / 2**30:>9.2f} GB{med(rows, 'flops'):>12.4g}"
        )
    ratio = med(ours, "seconds") / med(theirs, "seconds")
    print(f"roofline / FlopCounterMode time: {ratio:.2f}x (roofline also prices bytes, times and regimes for {ours[0]['ops']} ops)")
    same = ours[0]["gemm_flops"] == theirs[0]["flops"]
    print(
        f"matmul/attention FLOPs agree exactly: {same} ({ours[0]['gemm_flops']:.10g} vs {theirs[0]['flops']:.10g}); "
        f"roofline's total adds {ours[0]['flops'] - ours[0]['gemm_flops']:.4g} FLOPs of pointwise, norm and softmax ops"
    )
    print(f"unsupported ops: {ours[0]['unsupported'] or 'none'}")
    with_imports = med(ours, "seconds") + med(ours, "import_s")
    ok = with_imports <= 10 and med(ours, "peak_rss_bytes") <= 2 * 2**30
    print(f"roofline with its imports: {with_imports:.2f} s; targets (<= 10 s, <= 2 GB): {'met' if ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
