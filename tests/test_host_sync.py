"""A host read of a device value (``.item()``) makes the host wait for the device on the eager GPU
timeline: the ops after it cannot be issued while the GPU still runs the work before it."""

from __future__ import annotations

import torch

import roofline.model.timeline as timeline
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.model.device import DeviceModel
from roofline.profiles import find_profile


def _model(x):
    y = x @ x  # a kernel long enough for the host to run ahead of it
    if y.sum().item() > 0:  # the host needs the value: it waits for the matmul
        for _ in range(10):
            x = x + 1
    return x


def test_item_waits_for_the_device(monkeypatch):
    graph = capture(_model, (torch.ones(1024, 1024),), real=True)  # positive: the branch runs
    names = [op.name for op in graph.ops]
    assert "aten._local_scalar_dense.default" in names and names.count("aten.add.Tensor") == 10
    costs = [cost_of(op)[0] for op in graph.ops]
    gpu = DeviceModel(find_profile("nvidia-h100-80gb-hbm3").gpu, "cuda")
    waits = timeline.predict_timeline(graph, costs, gpu, is_module=False)
    monkeypatch.setattr(timeline, "reads_to_host", lambda op: None)
    runs_ahead = timeline.predict_timeline(graph, costs, gpu, is_module=False)
    mm = next(t for op, t in zip(graph.ops, waits.ops) if op.name == "aten.mm.default")
    sync_s = gpu.overheads.synchronize_s.median_s
    # without the wait the adds' host time hides under the matmul; with it, it follows the matmul
    adds_host_s = sum(t.host_s for op, t in zip(graph.ops, waits.ops) if op.name == "aten.add.Tensor")
    assert waits.total_s >= mm.end_s + sync_s + adds_host_s
    assert waits.total_s > runs_ahead.total_s + sync_s
    assert sum(t.predicted_s for t in waits.ops) <= waits.total_s * (1 + 1e-9)
