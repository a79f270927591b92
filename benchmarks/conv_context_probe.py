"""Whether a convolution timed alone (as calibration times it) runs as it does inside a model.

    python benchmarks/conv_context_probe.py --measure OUT.json      (GPU)
    python benchmarks/conv_context_probe.py --show OUT.json         (no GPU needed)

Each shape is a convolution of the zoo records (``benchmarks/results/h100_heldout.json``,
``h100_zoo_shipped.json``) whose per-op time inside its model the shipped profile misses by 20-120%:
NCHW 1x1s over planes of at most 16x16, Inception's 1x7 and 7x1 filters, one-image 3x3s in
float32. Each is timed four ways:

- ``event``: calibration's protocol (``roofline.timing.time_fn`` on CUDA events, the same tensors
  call after call, no cache flush), as ``calibrate.conv.measure_conv`` times a point;
- ``warm``: the profiler's summed kernel time of the op, the lower of two medians of three calls back
  to back, each set in its own profiler session and without a throwaway call to open it (unlike
  ``calibrate.conv.summed_kernels_s``): for multi-kernel calls it reads 1.3-1.9x the other ways, the
  session's start in it, and stands for nothing the zoo measures;
- ``cold``: the same after overwriting a buffer larger than L2 before each call, so the input and
  the weight come from DRAM;
- ``fresh``: after the flush, an in-place ReLU over the input first, so the convolution reads an
  input its producer has just written, as inside a model.

The zoo's per-op figure is the profiler's summed kernel time of the op inside the model; ``--show``
prints each way beside the in-model median of the records.
"""
import json
import statistics
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# (dtype, batch, in channels, height, width, out channels, kernel h, kernel w, stride, padding)
SHAPES = [
    ("float32", 32, 1152, 7, 7, 320, 1, 1, 1, 0), ("float32", 32, 512, 14, 14, 288, 1, 1, 1, 0),
    ("float32", 32, 840, 7, 7, 151, 1, 1, 1, 0), ("float32", 32, 512, 14, 14, 144, 1, 1, 1, 0),
    ("float32", 32, 528, 14, 14, 160, 1, 1, 1, 0), ("float32", 32, 1280, 14, 14, 320, 1, 1, 1, 0),
    ("float32", 32, 366, 14, 14, 72, 1, 1, 1, 0), ("float32", 32, 960, 7, 7, 320, 1, 1, 1, 0),
    ("float32", 32, 1024, 14, 14, 256, 1, 1, 1, 0), ("float32", 32, 408, 14, 14, 408, 1, 1, 1, 0),
    ("float32", 32, 1024, 8, 8, 1024, 1, 1, 1, 0), ("float32", 32, 384, 8, 8, 1152, 1, 1, 1, 0),
    ("float32", 32, 2048, 8, 8, 192, 1, 1, 1, 0),
    ("float16", 32, 1044, 7, 7, 185, 1, 1, 1, 0), ("float16", 32, 185, 7, 7, 1280, 1, 1, 1, 0),
    ("float16", 32, 972, 7, 7, 174, 1, 1, 1, 0), ("float16", 32, 160, 14, 14, 160, 1, 1, 1, 0),
    ("float16", 32, 64, 13, 13, 256, 1, 1, 1, 0), ("float16", 32, 768, 7, 7, 140, 1, 1, 1, 0),
    ("float16", 32, 408, 14, 14, 408, 1, 1, 1, 0), ("float16", 32, 2048, 7, 7, 1024, 1, 1, 1, 0),
    ("float16", 32, 336, 14, 14, 888, 1, 1, 1, 0), ("float16", 32, 512, 13, 13, 1000, 1, 1, 1, 0),
    ("float32", 32, 160, 17, 17, 160, 1, 7, 1, 0), ("float32", 32, 128, 17, 17, 192, 7, 1, 1, 0),
    ("float32", 32, 192, 17, 17, 192, 1, 7, 1, 0), ("float16", 32, 160, 17, 17, 192, 7, 1, 1, 0),
    ("float16", 32, 128, 17, 17, 128, 1, 7, 1, 0),
    ("float32", 1, 1024, 7, 7, 1024, 3, 3, 1, 1), ("float32", 1, 160, 14, 14, 320, 3, 3, 1, 1),
    ("float32", 1, 192, 13, 13, 384, 3, 3, 1, 1), ("float32", 1, 512, 7, 7, 512, 3, 3, 1, 1),
    ("float32", 1, 256, 28, 28, 512, 3, 3, 2, 1), ("float32", 1, 256, 14, 14, 512, 3, 3, 2, 1),
]
RECORDS = ("h100_heldout.json", "h100_zoo_shipped.json", "h100_fresh.json", "h100_fourth.json")
FLUSH_BYTES = 256 << 20


def _padding(kh: int, kw: int, pad: int) -> tuple[int, int]:
    """The zoo's asymmetric filters keep their plane (Inception's 1x7 pads 0x3)."""
    return (kh // 2, kw // 2) if kh != kw else (pad, pad)


def _tensors(shape, device: str = "cuda"):
    dtype_name, n, cin, h, w, cout, kh, kw, stride, pad = shape
    dtype = getattr(torch, dtype_name)
    x = torch.randn(n, cin, h, w, device=device, dtype=dtype)
    weight = torch.randn(cout, cin, kh, kw, device=device, dtype=dtype) / (cin * kh * kw) ** 0.5
    return x, weight, stride, _padding(kh, kw, pad)


def _conv_device_us(before, conv, reps: int) -> float:
    """The median over ``reps`` of the convolution's summed kernel time (us), ``before`` run ahead of
    each (its own kernels are not counted)."""
    from torch.profiler import ProfilerActivity, profile

    before(), conv()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            before()
            with torch.profiler.record_function("probe_conv"):
                conv()
        torch.cuda.synchronize()
    times = [e.device_time_total for e in prof.events() if e.name == "probe_conv" and e.device_time_total > 0]
    return statistics.median(times) if times else float("nan")


def measure(out: Path) -> None:
    from benchmarks.conv1x1_kernels import kernels as kernel_names
    from roofline.timing import time_fn

    torch.backends.cudnn.benchmark = False
    flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    rows = []
    with torch.no_grad():
        for shape in SHAPES:
            x, weight, stride, padding = _tensors(shape)
            conv = lambda: F.conv2d(x, weight, None, stride, padding)  # noqa: E731
            event = time_fn(conv, device="cuda", budget_s=0.05, warmup_budget_s=0.05, min_samples=5).stat().median_s * 1e6
            warm = min(_conv_device_us(lambda: None, conv, 3), _conv_device_us(lambda: None, conv, 3))
            cold = _conv_device_us(flush_buf.zero_, conv, 7)
            fresh = _conv_device_us(lambda: (flush_buf.zero_(), x.relu_()), conv, 7)
            kernels = {name[:90]: round(us, 2) for name, (_, us) in kernel_names(conv)[1].items()}
            rows.append(dict(shape=list(shape), event_us=event, warm_us=warm, cold_us=cold, fresh_us=fresh, kernels=kernels))
            print(f"{shape}: event {event:7.1f}  warm {warm:7.1f}  cold {cold:7.1f}  fresh {fresh:7.1f} us  "
                  f"{'; '.join(k[:50] for k in kernels)}", flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                                   cudnn=torch.backends.cudnn.version(), rows=rows), indent=1))


def in_model_us(records=RECORDS) -> dict[tuple, float]:
    """Per probe shape, the median of its per-op times inside the records' models (us)."""
    import gzip

    from roofline.graph.serialize import graph_from_dict

    wanted = {tuple(s) for s in SHAPES}
    found: dict[tuple, list[float]] = {}
    for name in records:
        record = json.loads((REPO / "benchmarks" / "results" / name).read_text())
        graphs = json.load(gzip.open(REPO / "benchmarks" / "results" / record["graphs_file"], "rt"))["graphs"]
        for row in record["rows"]:
            ops = graph_from_dict(graphs[row["label"]]).ops
            for i, t in row["ops"]:
                key = _shape_key(ops[i], row["dtype"])
                if key in wanted and t:
                    found.setdefault(key, []).append(t * 1e6)
    return {k: statistics.median(v) for k, v in found.items()}


def _shape_key(op, dtype: str) -> tuple | None:
    """A recorded op's probe key, where it is a dense (one-group) NCHW 2-d convolution."""
    from roofline.costs.registry import arguments

    inputs = op.tensor_inputs()
    if not op.name.startswith("aten.convolution") or len(inputs) < 2 or inputs[0].ndim != 4:
        return None
    x, w = inputs[0], inputs[1]
    if (x.shape[1] > 1 and x.stride[1] == 1) or w.ndim != 4 or w.shape[1] != x.shape[1]:
        return None
    a = arguments(op)
    stride, padding = int(a["stride"][0]), int(a["padding"][0])
    return (dtype, x.shape[0], x.shape[1], x.shape[2], x.shape[3], w.shape[0], w.shape[2], w.shape[3], stride,
            padding if w.shape[2] == w.shape[3] else 0)


def show(path: Path) -> None:
    data = json.loads(path.read_text())
    print(f"{path.name}: {data['device']}, torch {data['torch']}, cuDNN {data['cudnn']}")
    model = in_model_us()
    print(f"{'shape':58s} {'event':>7s} {'warm':>7s} {'cold':>7s} {'fresh':>7s} {'model':>7s}  us (model: median in {', '.join(RECORDS)})")
    for r in data["rows"]:
        m = model.get(tuple(r["shape"]))
        print(f"{str(tuple(r['shape'])):58s} {r['event_us']:7.1f} {r['warm_us']:7.1f} {r['cold_us']:7.1f} {r['fresh_us']:7.1f} "
              f"{m if m is not None else float('nan'):7.1f}")
    for way in ("event", "warm", "cold", "fresh"):
        ratios = [r[f"{way}_us"] / model[tuple(r["shape"])] for r in data["rows"] if tuple(r["shape"]) in model]
        if ratios:
            print(f"{way:5s} over model: median x{statistics.median(ratios):.2f}, median |ratio - 1| {100 * statistics.median(abs(x - 1) for x in ratios):.1f}%, "
                  f"max {100 * max(abs(x - 1) for x in ratios):.0f}% ({len(ratios)} shapes)")


def main() -> int:
    from benchmarks.sweep_checks import record_check_main

    return record_check_main(__doc__, measure, show, read_flag="show")


if __name__ == "__main__":
    raise SystemExit(main())
