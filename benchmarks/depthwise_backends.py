"""Which backend ATen picks for a GPU depthwise convolution, and what each backend costs, recorded.

    python benchmarks/depthwise_backends.py --measure OUT.json   # on the GPU: ATen's choice per case, timed points
    python benchmarks/depthwise_backends.py --check OUT.json     # anywhere: the model's rule against ATen's choices
    python benchmarks/depthwise_backends.py --sweep OUT.json [--profile P]   # the timed points priced

ATen sends a depthwise convolution (groups = input channels) either to cuDNN or to its own
``conv_depthwise2d`` kernel (``ConvParams::use_cudnn_depthwise``): channels-last inputs go to cuDNN,
float32 and bfloat16 NCHW ones to ATen's kernel, and float16 NCHW ones to cuDNN only where a
workload rule says so. ``torch._C._select_conv_backend`` names the backend for each case of a grid
over batch, channels, plane width, filter and stride (not timed);
``roofline.model.kernels.runs_cudnn_depthwise`` decides it from the operands, and ``--check``
prints the disagreements. The timed points pair float16 with bfloat16 at shapes real networks run
(the stems of EfficientNets and GhostNets, MixNet's large filters) to show what the backend choice
costs, and record the kernels each ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import DTYPES, error_line, kernel_s, priced_lines, record_check_main  # noqa: E402

GRID = dict(batch=[1, 2, 8, 16, 32, 64], channels=[8, 16, 24, 31, 32, 48, 64, 96, 128, 144, 192, 256, 384, 512, 768],
            width=[7, 8, 14, 28, 56, 112], filter=[1, 3, 5, 7], stride=[1, 2])
# the other dtypes and layouts, at fewer shapes: their rule does not read the workload
OTHER_KINDS = [("bfloat16", "nchw"), ("float32", "nchw"), ("float16", "channels_last"), ("bfloat16", "channels_last"), ("float32", "channels_last")]
OTHER_GRID = dict(batch=[1, 32], channels=[16, 144], width=[14, 56], filter=[3, 7], stride=[1, 2])

# (batch, channels, width, filter, stride[, channel multiplier]), each timed in float16 and bfloat16 NCHW
TIMED = [
    (32, 8, 112, 3, 1), (32, 16, 112, 3, 1), (32, 24, 112, 3, 1), (32, 16, 128, 3, 1), (32, 32, 112, 3, 1), (32, 48, 112, 3, 1),
    (32, 96, 112, 3, 2), (32, 32, 112, 3, 2), (32, 144, 56, 3, 2), (32, 240, 28, 5, 2), (32, 672, 14, 5, 2), (32, 144, 56, 5, 2),
    (32, 48, 56, 3, 1), (32, 144, 56, 3, 1), (32, 288, 56, 3, 1),
    (32, 24, 56, 7, 1), (32, 48, 56, 7, 1), (32, 96, 56, 7, 1), (32, 144, 56, 7, 1), (32, 192, 56, 7, 1), (32, 288, 56, 7, 1),
    (32, 80, 28, 7, 1), (32, 160, 28, 7, 1), (32, 320, 28, 7, 1), (32, 640, 28, 7, 1),
    (32, 144, 14, 9, 1), (32, 144, 14, 11, 1), (32, 300, 7, 9, 1), (1, 192, 28, 7, 1), (8, 144, 56, 7, 1),
    (32, 144, 27, 3, 2, 2), (32, 288, 14, 3, 2, 2),  # a channel multiplier of 2 (PiT's pooling convolutions)
]


def _cases() -> list[dict]:
    def grid(dtype: str, layout: str, g: dict) -> list[dict]:
        return [dict(dtype=dtype, layout=layout, batch=b, channels=c, width=w, filter=k, stride=s)
                for b in g["batch"] for c in g["channels"] for w in g["width"] for k in g["filter"] for s in g["stride"]]

    cases = grid("float16", "nchw", GRID)
    for dtype, layout in OTHER_KINDS:
        cases += grid(dtype, layout, OTHER_GRID)
    return cases


def _operands(case: dict, device: str):
    c, w, k = case["channels"], case["width"], case["filter"]
    x = torch.empty(case["batch"], c, w, w, device=device, dtype=DTYPES[case["dtype"]])
    weight = torch.empty(c * case.get("multiplier", 1), 1, k, k, device=device, dtype=DTYPES[case["dtype"]])
    if case["layout"] == "channels_last":
        x, weight = x.contiguous(memory_format=torch.channels_last), weight.contiguous(memory_format=torch.channels_last)
    return x, weight


def _call(case: dict, x, weight):
    k, s = case["filter"], case["stride"]
    return lambda: F.conv2d(x, weight, None, s, k // 2, 1, case["channels"])


def _backend(case: dict) -> str:
    x, weight = _operands(case, "cuda")
    k, s = case["filter"], case["stride"]
    backend = torch._C._select_conv_backend(x, weight, None, [s, s], [k // 2] * 2, [1, 1], False, [0, 0], case["channels"], None)
    return str(backend).rsplit(".", 1)[-1]


def _timed_points() -> list[dict]:
    return [dict(dtype=d, layout="nchw", batch=b, channels=c, width=w, filter=k, stride=s, multiplier=(m or [1])[0])
            for b, c, w, k, s, *m in TIMED for d in ("float16", "bfloat16")]


def describe(p: dict) -> str:
    times = f" x{p['multiplier']}" if p.get("multiplier", 1) > 1 else ""
    return f"{p['dtype']:<8} {p['layout']:<13} {p['batch']}x{p['channels']}x{p['width']}^2 k{p['filter']} s{p['stride']}{times}"


def measure(out: Path) -> None:
    from benchmarks.mechanism_sweep import kernel_names
    from roofline.timing import time_fn

    cases = _cases()
    for case in cases:
        case["backend"] = _backend(case)
    print(f"{len(cases)} cases asked", flush=True)
    points = []
    for p in _timed_points():
        x, weight = _operands(p, "cuda")
        x.normal_(), weight.normal_()
        fn = _call(p, x, weight)
        t = time_fn(fn, device="cuda", budget_s=0.05, label=describe(p)).stat()
        points.append(dict(p, backend=_backend(p), median_s=t.median_s, kernels=kernel_names(fn, "cuda")))
        print(f"{describe(p)}: {t.median_s * 1e6:8.1f} us  {points[-1]['backend']:<16} {points[-1]['kernels']}", flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, cudnn=torch.backends.cudnn.version(),
                                   cases=cases, points=points), indent=1))


def rule_says_cudnn(case: dict) -> bool:
    """The model's rule on the case captured on this machine (fake tensors)."""
    from roofline.graph.capture import capture
    from roofline.model.kernels import runs_cudnn_depthwise

    x, weight = _operands(case, "meta")
    graph = capture(lambda x, w: _call(case, x, w)(), (x, weight))
    (op,) = [op for op in graph.ops if "conv" in op.name]
    return runs_cudnn_depthwise(op)


def check(path: Path) -> int:
    record = json.loads(path.read_text())
    wrong = []
    for case in record["cases"]:
        ours = "Cudnn" if rule_says_cudnn(case) else "Native"
        aten = "Cudnn" if case["backend"].startswith("Cudnn") else "Native"
        if ours != aten:
            wrong.append(case)
            print(f"  {describe(case)}: ATen {case['backend']}, rule {ours}  <- differs")
    print(f"{record['device']}, torch {record['torch']}, cuDNN {record['cudnn']}")
    print(f"depthwise_backends: {len(record['cases']) - len(wrong)} of {len(record['cases'])} agree")
    return 1 if wrong else 0


def sweep(path: Path, profile_name: str) -> int:
    from roofline.pipeline import resolve_profile

    profile, _ = resolve_profile(profile_name, "cuda")
    points = json.loads(path.read_text())["points"]

    def predicted_s(p: dict) -> float:
        x, weight = _operands(p, "cpu")
        return kernel_s(lambda x, w: _call(p, x, w)(), (x, weight), profile)

    print("depthwise_backends: " + error_line(priced_lines(points, predicted_s, lambda p: f"{describe(p)} {p['backend']:<16}")))
    return 0


if __name__ == "__main__":
    sys.exit(record_check_main(__doc__, measure, check, sweep))
