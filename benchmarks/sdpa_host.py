"""Host time of one scaled-dot-product-attention call on a GPU, by dtype, backend and mask.

    python benchmarks/sdpa_host.py [--json OUT.json]

For each variant (float32, bfloat16, float16; no mask, is_causal, a boolean mask, an additive float
mask, the same expanded over heads as transformers' masks are), q/k/v of (batch, 16 heads, 128
tokens, 64): the host time per call of a loop of calls issued without a synchronize (launch-bound
while the device keeps up), the device time per call (the same loop plus a synchronize, divided by
the calls), the aten op SDPA chose, and the ops it ran inside (torch.profiler, CPU only). The host
figure is what an eager model pays for the call; the representative op of calibration
(``roofline.hostmix``, q of 1x2x8x8 float32, no mask) is the first row.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roofline.measure.run import _quiet_native_stderr  # noqa: E402

CALLS = 20


def variants(batch: int):
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        q, k, v = (torch.randn(batch, 16, 128, 64, device="cuda", dtype=dtype) for _ in range(3))
        causal = torch.ones(128, 128, device="cuda", dtype=torch.bool).tril()
        bool_mask = causal[None, None].expand(batch, 1, 128, 128)
        float_mask = torch.zeros(batch, 1, 128, 128, device="cuda", dtype=dtype).masked_fill(~bool_mask, torch.finfo(dtype).min)
        name = str(dtype).removeprefix("torch.")
        yield f"{name} no mask", lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v)
        yield f"{name} is_causal", lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        yield f"{name} bool mask", lambda q=q, k=k, v=v, m=bool_mask: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        yield f"{name} float mask", lambda q=q, k=k, v=v, m=float_mask: F.scaled_dot_product_attention(q, k, v, attn_mask=m)
        yield f"{name} float mask over heads", lambda q=q, k=k, v=v, m=float_mask.expand(batch, 16, 128, 128): F.scaled_dot_product_attention(q, k, v, attn_mask=m)


def host_and_device(fn) -> tuple[float, float]:
    hosts, totals = [], []
    for _ in range(15):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(CALLS):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        hosts.append((t1 - t0) / CALLS)
        totals.append((t2 - t0) / CALLS)
    return statistics.median(hosts), statistics.median(totals)


def inner_ops(fn) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU])
    with _quiet_native_stderr():
        prof.start()
    try:
        fn()
        torch.cuda.synchronize()
    finally:
        with _quiet_native_stderr():
            prof.stop()
    return [f"{e.name} {e.cpu_time_total:.0f}us" for e in prof.events() if e.name.startswith("aten::")]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rows = []
    q = torch.rand(1, 2, 8, 8, device="cuda")
    cases = [("calibration's op: float32 1x2x8x8", lambda: F.scaled_dot_product_attention(q, q, q))]
    for batch in (1, 4):
        cases += [(f"b{batch} {name}", fn) for name, fn in variants(batch)]
    with torch.no_grad():
        for name, fn in cases:
            for _ in range(5):
                fn()
            host, total = host_and_device(fn)
            ops = inner_ops(fn)
            rows.append(dict(case=name, host_s=host, total_s=total, ops=ops))
            print(f"{name:<40} host {host * 1e6:7.1f} us  wall {total * 1e6:7.1f} us  | {' '.join(o for o in ops[:8])}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=time.strftime("%Y-%m-%d"), rows=rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
