"""How fast `roofline advise` is, as whole processes, against what a user would compare it with.

    python benchmarks/advise_speed.py [--pairs 5] [--profile nvidia-h100-80gb-hbm3]

Three figures, each from whole processes run in alternating pairs (A B A B ...: a ratio taken pair by
pair holds when the machine's speed drifts), the median reported:

- a small model: `roofline advise examples/mlp_tiny.py` against `python -c "import torch"`, the floor
  any PyTorch tool pays (target <= 2.0x);
- GPT-2 XL (examples/gpt2_xl.py): `roofline advise` against FlopCounterMode on the same model built on
  the meta device, one forward (target <= 1.3x); their matmul and attention FLOPs are compared too;
- a 70B-shaped Llama (examples/llama.py, ROOFLINE_LLAMA_SIZE=70b): wall time and peak memory of
  `roofline advise` (targets <= 20 s, <= 2 GB).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FLOPCOUNTER = r"""
import json, sys
import torch
from torch.utils.flop_counter import FlopCounterMode
from roofline.graph.loading import load_model_file
loaded = load_model_file(sys.argv[1])   # built on the meta device: no memory
with torch.no_grad(), FlopCounterMode(display=False) as counter:
    loaded.model.eval()(*loaded.args, **loaded.kwargs)
print(json.dumps({"flops": counter.get_total_flops()}))
"""


def run_measured(cmd: list[str], env: dict | None = None) -> tuple[float, int, str]:
    """(wall seconds, peak resident bytes, stdout) of one whole process, its own accounting."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=REPO, env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read()[-2000:]}")
        return wall, usage.ru_maxrss * 1024, out.read()


def pairs(a: list[str], b: list[str], n: int, env: dict | None = None) -> dict:
    """A and B alternated ``n`` times after one warm-up of each: medians and the pair-by-pair ratio."""
    run_measured(a, env)
    run_measured(b, env)
    rows = []
    for _ in range(n):
        ta, ra, out_a = run_measured(a, env)
        tb, rb, out_b = run_measured(b, env)
        rows.append((ta, tb, ra, rb, out_a, out_b))
    return dict(
        a_s=statistics.median(r[0] for r in rows), b_s=statistics.median(r[1] for r in rows),
        ratio=statistics.median(r[0] / r[1] for r in rows), ratios=[r[0] / r[1] for r in rows],
        a_rss=max(r[2] for r in rows), b_rss=max(r[3] for r in rows), out_a=rows[-1][4], out_b=rows[-1][5],
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    args = ap.parse_args()
    py = sys.executable
    advise = [py, "-m", "roofline", "advise"]
    print(f"whole processes, {args.pairs} alternating pairs after a warm-up each; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")

    small = pairs([*advise, "examples/mlp_tiny.py", "--profile", args.profile], [py, "-c", "import torch"], args.pairs)
    print(f"small model  roofline advise mlp_tiny {small['a_s']:.2f} s | import torch {small['b_s']:.2f} s | "
          f"ratio {small['ratio']:.2f}x (pairs {min(small['ratios']):.2f}-{max(small['ratios']):.2f}; target <= 2.0x)")

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "gpt2_xl.json"
        xl = pairs([*advise, "examples/gpt2_xl.py", "--profile", args.profile, "--json", str(report)],
                   [py, "-c", FLOPCOUNTER, "examples/gpt2_xl.py"], args.pairs)
        ops = json.loads(report.read_text())["ops"]
    gemm = sum(op["flops"] for op in ops if op["category"] in ("matmul", "conv", "attention"))
    reference = json.loads(xl["out_b"].strip().splitlines()[-1])["flops"]
    print(f"GPT-2 XL     roofline advise {xl['a_s']:.2f} s, {xl['a_rss'] / 2**30:.2f} GB | FlopCounterMode {xl['b_s']:.2f} s, "
          f"{xl['b_rss'] / 2**30:.2f} GB | ratio {xl['ratio']:.2f}x (pairs {min(xl['ratios']):.2f}-{max(xl['ratios']):.2f}; target <= 1.3x)")
    print(f"             matmul and attention FLOPs: roofline {gemm:.6g}, FlopCounterMode {reference:.6g} ({'equal' if gemm == reference else 'DIFFERENT'}); {len(ops)} ops priced")

    walls, rss = [], []
    for _ in range(max(1, args.pairs // 2)):
        wall, peak, _ = run_measured([*advise, "examples/llama.py", "--profile", args.profile], env={"ROOFLINE_LLAMA_SIZE": "70b"})
        walls.append(wall)
        rss.append(peak)
    print(f"70B Llama    roofline advise {statistics.median(walls):.2f} s (runs {min(walls):.2f}-{max(walls):.2f}), "
          f"peak {max(rss) / 2**30:.2f} GB (targets <= 20 s, <= 2 GB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
