"""Tensors inside arbitrary Python values: what a model takes and returns.

Models take and return more than tuples of tensors: dicts, dataclasses (transformers'
``ModelOutput``), and cache objects (``DynamicCache`` and its kin) that hold lists of per-layer
tensors in their attributes. These helpers find every tensor in such a value, and rebuild a value
with each tensor replaced, without the object registering itself with any tree library.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Iterator

import torch

MAX_DEPTH = 8  # deeper nesting than a cache of per-layer objects is not model data


def _is_plain_object(x: Any) -> bool:
    """An instance whose attributes may hold tensors (not a class, function, module or tensor)."""
    return hasattr(x, "__dict__") and not isinstance(x, (type, torch.nn.Module, torch.Tensor)) and not callable(x)


def tensors_in(x: Any, depth: int = 0, seen: set[int] | None = None) -> Iterator[torch.Tensor]:
    """Every tensor in ``x``, depth first, in a stable order (sequences in order, mappings and
    attributes in insertion order); a tensor reachable twice is yielded once."""
    seen = set() if seen is None else seen
    if isinstance(x, torch.Tensor):
        if id(x) not in seen:
            seen.add(id(x))
            yield x
        return
    if depth > MAX_DEPTH or id(x) in seen or isinstance(x, (str, bytes, int, float, bool, type(None))):
        return
    if isinstance(x, (list, tuple, dict)) or _is_plain_object(x):
        seen.add(id(x))
    if isinstance(x, dict):
        for v in x.values():
            yield from tensors_in(v, depth + 1, seen)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from tensors_in(v, depth + 1, seen)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            yield from tensors_in(getattr(x, f.name, None), depth + 1, seen)
    elif _is_plain_object(x):
        for v in list(vars(x).values()):
            yield from tensors_in(v, depth + 1, seen)


def map_tensors(x: Any, fn: Callable[[torch.Tensor], Any], depth: int = 0, memo: dict[int, Any] | None = None) -> Any:
    """A copy of ``x`` with every tensor replaced by ``fn(tensor)``; containers and objects that hold
    tensors are copied (shallowly, then their tensor-holding parts replaced), the rest shared. One
    object reachable twice is copied once."""
    memo = {} if memo is None else memo
    if isinstance(x, torch.Tensor):
        if id(x) not in memo:
            memo[id(x)] = fn(x)
        return memo[id(x)]
    if depth > MAX_DEPTH or isinstance(x, (str, bytes, int, float, bool, type(None))):
        return x
    if id(x) in memo:
        return memo[id(x)]
    if not any(True for _ in tensors_in(x)):
        return x
    if isinstance(x, dict):
        out = copy.copy(x)
        memo[id(x)] = out
        for k, v in x.items():
            out[k] = map_tensors(v, fn, depth + 1, memo)
        return out
    if isinstance(x, list):
        out = copy.copy(x)
        memo[id(x)] = out
        out[:] = [map_tensors(v, fn, depth + 1, memo) for v in x]
        return out
    if isinstance(x, tuple):
        items = [map_tensors(v, fn, depth + 1, memo) for v in x]
        out = type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
        memo[id(x)] = out
        return out
    if _is_plain_object(x):
        out = copy.copy(x)
        memo[id(x)] = out
        attributes = vars(out)
        for k, v in list(vars(x).items()):
            attributes[k] = map_tensors(v, fn, depth + 1, memo)
        return out
    return x
