"""What does one scaled_dot_product_attention call cost the host, per backend?

    python benchmarks/attention_host_probe.py [--device cuda]

The advice prices an op's host dispatch by a calibrated representative op of its kind; attention
used to stand in as an addmm. The transformer-block rows of the accuracy benchmark, which are
host-bound at batch 1, came out 20-30% low. This probe times the host issue of one
``F.scaled_dot_product_attention`` call (no synchronize; small shapes, so the host is the
bottleneck) with the default backend choice and with each backend forced, beside ``F.linear``,
and prints the kernels each launches. Then it profiles one forward of the GPT block example at
batch 1 and prints the host (CPU) time of each aten op, largest first.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from calibrate.overhead import kernel_names  # noqa: E402
from roofline.timing import time_fn  # noqa: E402


def issue_us(fn, device: str) -> float:
    t = time_fn(fn, device=device, clock="host", inner=20, budget_s=0.2, warmup_budget_s=0.1, min_samples=7)
    return t.median_s * 1e6


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    dev = args.device
    torch.set_grad_enabled(False)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(dev)}; host issue per call, us (medians)")
    x = torch.rand(8, 8, device=dev)
    w = torch.rand(8, 8, device=dev)
    b = torch.rand(8, device=dev)
    print(f"  F.linear 8x8 fp32: {issue_us(lambda: F.linear(x, w, b), dev):6.1f} us")
    backends = [("default", None), ("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION),
                ("efficient", SDPBackend.EFFICIENT_ATTENTION), ("math", SDPBackend.MATH)]
    # Every timing first, every profiler session after: a profiler session leaves CUPTI subscribed
    # and slows later launches from this process 1.4-1.6x (benchmarks/host_state_probe.py).
    named = []
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for shape in ((1, 2, 16, 64), (1, 12, 512, 64)):
            q, k, v = (torch.randn(shape, device=dev, dtype=dtype) for _ in range(3))
            for causal in (True, False):
                for label, backend in backends:
                    fn = lambda q=q, k=k, v=v, causal=causal: F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # noqa: E731
                    try:
                        with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
                            t = issue_us(fn, dev)
                    except Exception as e:  # noqa: BLE001 - a backend that does not take this input
                        print(f"  sdpa {str(dtype)[6:]:<8} {str(shape):<16} causal={causal!s:<5} {label:<9}: not available ({type(e).__name__})")
                        continue
                    row = f"  sdpa {str(dtype)[6:]:<8} {str(shape):<16} causal={causal!s:<5} {label:<9}: {t:6.1f} us"
                    print(row)
                    named.append((row, fn, backend))

    # The GPT block at batch 1, fp16: host time by aten op under the profiler (CPU self time).
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import os

    os.environ["ROOFLINE_EXAMPLE_DTYPE"] = "float16"
    import gpt_block

    model = gpt_block.make_model().to(dev)
    (inp,) = gpt_block.make_inputs(batch=1)
    inp = inp.to(dev)
    for _ in range(10):
        model(inp)
    torch.cuda.synchronize(dev)
    blk = model
    x = inp
    c = x.shape[-1]
    h = blk.ln_1(x)
    qkv = blk.attn.qkv(h)
    q, k, v = (t.view(1, 512, 12, 64).transpose(1, 2) for t in qkv.split(c, dim=2))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    f1 = blk.mlp.fc_1(h)
    pieces = {
        "layer_norm (1,512,768) + weight, bias": lambda: blk.ln_1(x),
        "linear qkv 768->2304": lambda: blk.attn.qkv(h),
        "split + 3x view + 3x transpose": lambda: [t.view(1, 512, 12, 64).transpose(1, 2) for t in qkv.split(c, dim=2)],
        "sdpa (1,12,512,64) causal": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "transpose + contiguous + view": lambda: y.transpose(1, 2).contiguous().view(1, 512, c),
        "linear proj 768->768": lambda: blk.attn.proj(h),
        "add (residual)": lambda: x + h,
        "linear fc_1 768->3072": lambda: blk.mlp.fc_1(h),
        "gelu tanh": lambda: blk.mlp.gelu(f1),
        "linear fc_2 3072->768": lambda: blk.mlp.fc_2(f1),
    }
    counts = {"layer_norm (1,512,768) + weight, bias": 2, "add (residual)": 2}
    total = 0.0
    print("gpt_block fp16 b1, each piece alone (host issue, or its kernel time where longer):")
    for label, fn in pieces.items():
        t = issue_us(fn, dev)
        n = counts.get(label, 1)
        total += n * t
        print(f"  {n} x {label:<40} {t:7.1f} us")
    print(f"  sum of pieces {total:.1f} us")
    print(f"gpt_block fp16 b1: host issue of one forward {issue_us(lambda: model(inp), dev):.1f} us; "
          f"call+sync {time_fn(lambda: (model(inp), torch.cuda.synchronize(dev)), device=dev, clock='host', inner=1, budget_s=0.3, min_samples=10).median_s * 1e6:.1f} us")
    print("kernels per sdpa call (profiler, after every timing):")
    for row, fn, backend in named:
        with sdpa_kernel(backend) if backend is not None else contextlib.nullcontext():
            names = kernel_names(fn, dev)
        kinds = ", ".join(f"{n}x {k[:60]}" for k, n in collections.Counter(names).most_common(3))
        print(f"{row}  kernels {len(names)}: {kinds}")
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(20):
            model(inp)
        torch.cuda.synchronize(dev)
    rows = sorted(prof.key_averages(), key=lambda e: -e.cpu_time_total)
    print("  aten op                                      calls  total CPU us/forward  self CPU us/forward")
    for e in rows[:25]:
        print(f"  {e.key[:44]:<44} {e.count // 20:5d}  {e.cpu_time_total / 20:10.1f}  {e.self_cpu_time_total / 20:10.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
