"""wav2vec 2.0's positional convolution inside the model against the same shapes alone, on the GPU.

    python benchmarks/posconv_probe.py --measure OUT.json      (on the GPU, with transformers)
    python benchmarks/posconv_probe.py --show OUT.json

The held-out zoo's wav2vec 2.0 ran its positional convolution (768 channels in 16 groups, a filter of
128 taps, weight-normed, over 49 frames) at 3-11 ms per call, where the same shapes timed alone
(``h100_odd_convs.json``) took 0.5-1.4 ms. This times, per dtype and batch, the convolution as the
model's module runs it (weight norm included), as its parametrized layer runs it, and alone on the
normed weight with a transposed or contiguous input, with and without its bias, each with the kernels
of one call, to find which difference makes the time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F


def cases(batch: int, dtype: torch.dtype) -> dict:
    """Name -> a call on the GPU."""
    import transformers

    config = transformers.Wav2Vec2Config()
    module = transformers.models.wav2vec2.modeling_wav2vec2.Wav2Vec2PositionalConvEmbedding(config).cuda().to(dtype).eval()
    hidden = torch.randn(batch, 49, 768, device="cuda", dtype=dtype)
    conv = module.conv
    weight = conv.weight.detach().clone().contiguous()
    bias = conv.bias.detach().clone()
    x_t = hidden.transpose(1, 2)
    x_c = x_t.contiguous()
    pad, groups = conv.padding[0], conv.groups
    return {
        "module (weight norm + conv + pad + gelu)": lambda: module(hidden),
        "conv, transposed input, bias": lambda: F.conv1d(x_t, weight, bias, 1, pad, 1, groups),
        "conv, contiguous input, bias": lambda: F.conv1d(x_c, weight, bias, 1, pad, 1, groups),
        "conv, contiguous input, no bias": lambda: F.conv1d(x_c, weight, None, 1, pad, 1, groups),
        "conv as the module calls it": lambda: conv(x_t),
    }


def measure(path: str) -> None:
    from torch.profiler import ProfilerActivity, profile

    from roofline.timing import time_fn

    rows = []
    with torch.no_grad():
        for dtype in (torch.float32, torch.float16):
            for batch in (1, 8):
                for name, fn in cases(batch, dtype).items():
                    t = time_fn(fn, device="cuda", budget_s=0.3, label=name)
                    with profile(activities=[ProfilerActivity.CUDA]) as prof:
                        fn()
                        torch.cuda.synchronize()
                    kernels = [(e.name[:100], e.device_time_total * 1e-6) for e in prof.events() if e.device_type.name == "CUDA"]
                    rows.append(dict(case=name, dtype=str(dtype).split(".")[-1], batch=batch, median_s=t.median_s, kernels=kernels))
                    print(f"{rows[-1]['dtype']:<8} b{batch:<2} {name:<44} {t.median_s * 1e6:9.1f} us  {len(kernels)} kernels")
    Path(path).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), indent=1))


def show(path: str) -> None:
    record = json.loads(Path(path).read_text())
    print(f"{record['device']}, torch {record['torch']}")
    for r in record["rows"]:
        names = sorted({k[:60] for k, _ in r["kernels"]})
        print(f"{r['dtype']:<8} b{r['batch']:<2} {r['case']:<44} {r['median_s'] * 1e6:9.1f} us  {len(r['kernels'])} kernels: {'; '.join(names)[:200]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", metavar="OUT")
    ap.add_argument("--show", metavar="RECORD")
    args = ap.parse_args()
    if not (args.measure or args.show):
        ap.error("pass --measure OUT (on the GPU) or --show RECORD")
    if args.measure:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        measure(args.measure)
    if args.show:
        show(args.show)
    return 0


if __name__ == "__main__":
    sys.exit(main())
