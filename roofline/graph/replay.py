"""Run the captured ops again, one by one, on real tensors: what ``--measure`` profiles per op.

Each op is called as the capture recorded it, with every tensor argument looked up by the value the
capture named it (an input, a piece of the model's state, an earlier op's output, or a constant),
so that a profiler sees exactly one top-level aten call per captured op.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

from roofline.graph.ops import CapturedGraph, TensorMeta
from roofline.graph.structure import tensors_in
from roofline.graph.training import TrainStep, is_host_step


def replayable(graph: CapturedGraph) -> bool:
    return graph.replay is not None


def _constant(value: Any, device: str, keep_cpu_scalars: bool) -> torch.Tensor:
    """A constant of a real capture as it was; one of a fake capture (metadata only) as ones. With
    ``keep_cpu_scalars`` (a capture on the device replayed), a CPU scalar stays on the CPU, as in the
    run captured (a foreach optimizer adds a CPU one to its CPU step counts)."""
    if keep_cpu_scalars and str(value.device) == "cpu" and len(value.shape) == 0:
        device = "cpu"
    if isinstance(value, torch.Tensor):
        return value.to(device)
    assert isinstance(value, TensorMeta)
    return torch.ones(value.shape, dtype=value.dtype, device=device)


def _captured_on_cpu(graph: CapturedGraph) -> bool:
    """Whether the capture ran on CPU tensors (a GPU model captured on the CPU names no device)."""
    metas = [*graph.inputs, *(t for op in graph.ops[:1] for t in op.tensor_inputs())]
    return all(str(t.device) == "cpu" for t in metas)


def bind(graph: CapturedGraph, state: dict[str, torch.Tensor], args: tuple, kwargs: dict, device: str) -> dict[str, torch.Tensor]:
    """The values a replay starts from: the model's state and the inputs (real tensors on
    ``device``), and the capture's constants."""
    plan = graph.replay
    values: dict[str, torch.Tensor] = {f"state.{name}": t for name, t in state.items()}
    inputs = list(tensors_in((args, kwargs)))
    if len(inputs) != plan.inputs:
        raise ValueError(f"the capture took {plan.inputs} input tensors, the replay got {len(inputs)}")
    values.update({f"input.{i}": t for i, t in enumerate(inputs)})
    keep_cpu_scalars = not _captured_on_cpu(graph)
    values.update({name: _constant(c, device, keep_cpu_scalars) for name, c in plan.constants.items()})
    values.update(_optimizer_state(graph, values, device))
    return values


def _optimizer_state(graph: CapturedGraph, values: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    """A training step's optimizer state (``optim.I.KEY``, made before the recorded step, so neither
    the model's state nor a constant) as ones of the metadata its ops read, on ``device`` but for a
    step count torch keeps on the CPU (``training.is_host_step``), wherever the capture ran."""
    step = TrainStep(implementation=graph.training.implementation) if graph.training is not None else TrainStep()
    made: dict[str, torch.Tensor] = {}
    for op in graph.ops:
        for meta, (name, _) in zip(op.tensor_inputs(), op.input_sources):
            if name.startswith("optim.") and name not in values and name not in made:
                on_host = is_host_step(name.rsplit(".", 1)[1], step)
                made[name] = torch.ones(meta.shape, dtype=meta.dtype, device="cpu" if on_host else device)
    return made


def arguments(op, values: dict[str, torch.Tensor]) -> tuple[tuple, dict]:
    """The captured op's arguments with every tensor looked up in ``values`` by the value it read."""
    names = iter(op.input_sources)

    def real(x):
        if isinstance(x, TensorMeta):
            return values[next(names)[0]]
        if isinstance(x, list):
            return [real(y) for y in x]
        if isinstance(x, tuple):
            return tuple(real(y) for y in x)
        if isinstance(x, dict):
            return {k: real(v) for k, v in x.items()}
        return x

    return tuple(real(a) for a in op.args), {k: real(v) for k, v in op.kwargs.items()}


def replay(graph: CapturedGraph, values: dict[str, torch.Tensor]) -> None:
    """Call every captured op in order on the real ``values`` (from ``bind``); each op's outputs
    join them under the names the capture gave them."""
    values = dict(values)
    for op in graph.ops:
        args, kwargs = arguments(op, values)
        out = op.target(*args, **kwargs)
        for k, t in enumerate(t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)):
            values[f"op.{op.index}.{k}"] = t
