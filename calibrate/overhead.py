"""Fixed per-call costs: host dispatch of one aten op, one nn.Module call, the smallest kernel,
CUDA-graph replay, and synchronize. These set the overhead regime that pure rooflines ignore.

Host costs are timed with the host clock over many back-to-back calls on tiny tensors, so the
device work is far shorter than the host's and the host is what is measured.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from roofline.profile import Overheads
from roofline.timing import time_fn

INNER = 100  # calls per timed repetition: one perf_counter reading is ~50 ns, one call ~5 us


class _Passthrough(torch.nn.Module):
    def forward(self, x):
        return x


def _passthrough(x):
    return x


def _host(fn, device, label, warnings, budget_s, inner=INNER):
    t = time_fn(fn, device=device, clock="host", inner=inner, budget_s=budget_s, warmup_budget_s=budget_s, min_samples=7, label=label)
    if t.warning:
        warnings.append(t.warning)
    return t


def representative_ops(device: str) -> dict:
    """Small ops whose host dispatch cost stands for each op category in prediction."""
    x = torch.rand(8, 8, device=device)
    y = torch.rand(8, 8, device=device)
    w = torch.rand(8, 8, device=device)
    b = torch.rand(8, device=device)
    return {
        "add": lambda: torch.add(x, y),
        "relu": lambda: torch.relu(x),
        "view": lambda: x.view(64),
        "addmm": lambda: F.linear(x, w, b),
        "sum": lambda: torch.sum(x, dim=1),
        "softmax": lambda: torch.softmax(x, dim=-1),
        "layer_norm": lambda: F.layer_norm(x, (8,)),
        "cat": lambda: torch.cat([x, y]),
    }


def measure_overheads(device: str, *, budget_s: float, warnings: list, progress=None) -> Overheads:
    by_op = {}
    for name, fn in representative_ops(device).items():
        by_op[name] = _host(fn, device, f"dispatch {name}", warnings, budget_s).stat()
        if progress:
            progress()

    x = torch.rand(8, device=device)
    module = _Passthrough()
    module_t = _host(lambda: module(x), device, "nn.Module call", warnings, budget_s)
    plain_t = _host(lambda: _passthrough(x), device, "plain call", warnings, budget_s)
    extra = max(module_t.median_s - plain_t.median_s, 1e-9)
    from roofline.profile import Stat

    module_call = Stat(median_s=extra, iqr_s=module_t.iqr_s, samples=module_t.n)
    if progress:
        progress()

    fields = dict(dispatch_s=by_op["add"], module_call_s=module_call, dispatch_by_op_s=by_op)
    if device.startswith("cuda"):
        fields.update(_gpu_overheads(device, budget_s, warnings))
    else:
        fields["op_small_s"] = by_op["add"]
    if progress:
        progress()
    return Overheads(**fields)


def _gpu_overheads(device: str, budget_s: float, warnings: list) -> dict:
    kernels = 200
    x = torch.zeros(1, device=device)
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            x.add_(1)
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(kernels):
            x.add_(1)
    one = torch.cuda.CUDAGraph()
    with torch.cuda.graph(one):
        x.add_(1)

    per_kernel = time_fn(graph.replay, device=device, clock="device", budget_s=budget_s, min_samples=7, label="graph kernel")
    per_kernel_samples = per_kernel.samples_s / kernels
    from roofline.timing import summarize

    graph_kernel = summarize(per_kernel_samples, "kernel in a CUDA graph")
    launch = _host(graph.replay, device, "graph replay launch", warnings, budget_s, inner=10)
    sync = time_fn(lambda: torch.cuda.synchronize(device), device=device, clock="host", inner=10, budget_s=budget_s, min_samples=7, label="synchronize")
    for t in (graph_kernel, launch, sync):
        if t.warning:
            warnings.append(t.warning)
    del one
    return dict(
        kernel_min_s=graph_kernel.stat(),
        graph_kernel_s=graph_kernel.stat(),
        graph_launch_s=launch.stat(),
        synchronize_s=sync.stat(),
    )
