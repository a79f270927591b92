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


def replayable(graph: CapturedGraph) -> bool:
    return graph.replay is not None


def _constant(value: Any, device: str) -> torch.Tensor:
    """A constant of a real capture as it was; one of a fake capture (metadata only) as ones. A CPU
    scalar stays on the CPU, as in the run captured (an optimizer adds one to its CPU step counts)."""
    if str(value.device) == "cpu" and len(value.shape) == 0:
        device = "cpu"
    if isinstance(value, torch.Tensor):
        return value.to(device)
    assert isinstance(value, TensorMeta)
    return torch.ones(value.shape, dtype=value.dtype, device=device)


def bind(graph: CapturedGraph, state: dict[str, torch.Tensor], args: tuple, kwargs: dict, device: str) -> dict[str, torch.Tensor]:
    """The values a replay starts from: the model's state and the inputs (real tensors on
    ``device``), and the capture's constants."""
    plan = graph.replay
    values: dict[str, torch.Tensor] = {f"state.{name}": t for name, t in state.items()}
    inputs = list(tensors_in((args, kwargs)))
    if len(inputs) != plan.inputs:
        raise ValueError(f"the capture took {plan.inputs} input tensors, the replay got {len(inputs)}")
    values.update({f"input.{i}": t for i, t in enumerate(inputs)})
    values.update({name: _constant(c, device) for name, c in plan.constants.items()})
    values.update(_optimizer_state(graph, values, device))
    return values


def _optimizer_state(graph: CapturedGraph, values: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    """A training step's optimizer state (``optim.I.KEY``, made before the recorded step, so neither
    the model's state nor a constant) as ones of the metadata its ops read, on the device it names (a
    step count torch keeps on the CPU stays there)."""
    made: dict[str, torch.Tensor] = {}
    for op in graph.ops:
        metas = [t for t in pytree.tree_leaves((op.args, op.kwargs)) if isinstance(t, TensorMeta)]
        for meta, (name, _) in zip(metas, op.input_sources):
            if name.startswith("optim.") and name not in values and name not in made:
                made[name] = torch.ones(meta.shape, dtype=meta.dtype, device="cpu" if str(meta.device) == "cpu" else device)
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
