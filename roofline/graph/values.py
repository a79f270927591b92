"""Values of the small tensors a capture can know, so that a model's data-dependent branches go the
way a real run of the same inputs goes.

Fake tensors carry no values, yet models branch on small ones: transformers skips building an
attention mask when the mask it was given is all ones (then SDPA runs without a mask, or with
``is_causal`` and ``enable_gqa``, often another backend). A capture that cannot answer takes the
other branch and records a program the real run never executes.

Values are known for:

- inputs given as real tensors (the Python API, a materialized model file);
- inputs made on the meta device by a constant factory (``torch.ones``, ``zeros``, ``full``,
  ``arange``, ``tensor``, ``eye`` and the ``*_like`` fills) while ``Recipes`` was active (a model
  file is loaded under it), and not changed in place since;
- Python data lifted into a tensor (``torch.tensor(...)`` inside the model);
- the results of ops whose tensor inputs all have known values, and of fills, when they are small
  (at most ``MAX_DERIVED_ELEMENTS``): they are computed again on real CPU tensors beside the fake ones.

``Shadow`` holds these values for one capture; ``roofline.graph.capture`` answers a read of a known
value (``.item()``, ``bool(t)``) from it instead of failing, and records the read as the host sync
it is in a real run.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import _disable_current_modes
from torch.utils import _pytree as pytree
from torch.utils.weak import WeakIdKeyDictionary

MAX_ELEMENTS = 1 << 16  # an input or constant whose values are kept: a mask of 2 x 1 x 128 x 128 is 32768
# A result computed from known values: larger, so that a mask the model expands from a known one (a
# 1 x 1 x 512 x 512 attention mask, Longformer's padded to its window) keeps its values. Only results
# whose every input is known are computed, and an image or activation is never known (past
# MAX_ELEMENTS, or computed from weights past it), so this bounds masks and index tensors, not a forward.
MAX_DERIVED_ELEMENTS = 1 << 20

aten = torch.ops.aten

# Functions whose result's values follow from their arguments alone (no randomness, no memory).
_FACTORIES = {
    torch.ones, torch.zeros, torch.full, torch.arange, torch.tensor, torch.as_tensor, torch.eye,
    torch.ones_like, torch.zeros_like, torch.full_like,
}
# aten ops whose output values do not depend on their tensor inputs' values (only on their dtype
# and shape): computed on a placeholder of the same dtype and shape
_FILLS = {
    aten.new_ones.default, aten.new_zeros.default, aten.new_full.default, aten.ones_like.default, aten.zeros_like.default,
    aten.full_like.default,
}

_LIFTS = {aten.lift_fresh.default, aten.lift_fresh_copy.default}  # Python data made a tensor (torch.tensor)

# tensor -> (factory, args, kwargs, version when made): how a meta tensor with known values was made
_RECIPES: WeakIdKeyDictionary = WeakIdKeyDictionary()


class Recipes(TorchFunctionMode):
    """Remembers how tensors made by constant factories were made, while a model file or a model
    builder runs under ``torch.device("meta")`` (their values are then computed when needed)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func in _FACTORIES and isinstance(out, torch.Tensor) and out.is_meta and out.numel() <= MAX_ELEMENTS:
            _RECIPES[out] = (func, args, kwargs, out._version)
        return out


def value_of(t: torch.Tensor) -> torch.Tensor | None:
    """The values of a tensor given to a capture, as a real CPU tensor, when they are known."""
    if t.numel() > MAX_ELEMENTS or _is_fake(t):
        return None
    if not t.is_meta:
        return t.detach().to("cpu", copy=True)
    recipe = _RECIPES.get(t)
    if recipe is None:
        return None
    func, args, kwargs, version = recipe
    if t._version != version:  # written in place after it was made
        return None
    try:
        real_args = pytree.tree_map(_cpu_recipe_arg, (args, kwargs))
        if any(a is _UNKNOWN for a in pytree.tree_leaves(real_args)):
            return None
        value = func(*real_args[0], **real_args[1])
    except Exception:  # noqa: BLE001 - a recipe that does not run gives no value
        return None
    return value if isinstance(value, torch.Tensor) and value.shape == t.shape and value.dtype == t.dtype else None


class _Unknown:
    pass


_UNKNOWN = _Unknown()


def _cpu_recipe_arg(x: Any) -> Any:
    if isinstance(x, torch.device) or (isinstance(x, str) and x in ("meta", "cuda")):
        return torch.device("cpu")
    if isinstance(x, torch.Tensor):  # a *_like fill's template: only its shape and dtype matter
        return torch.empty(x.shape, dtype=x.dtype)
    return x


class Shadow:
    """Known values of one capture's tensors, keyed by the (fake) tensors the model computes with.
    Each value is a real CPU tensor; a value may be a view of another's (a slice of a known mask),
    as the fake tensors are views of each other."""

    def __init__(self) -> None:
        self.values: WeakIdKeyDictionary = WeakIdKeyDictionary()

    def __contains__(self, t: object) -> bool:
        return isinstance(t, torch.Tensor) and t in self.values

    def get(self, t: torch.Tensor) -> torch.Tensor | None:
        return self.values.get(t)

    def know(self, fake: torch.Tensor, value: torch.Tensor | None) -> None:
        """Remember ``value`` as ``fake``'s: a real tensor of its shape, nothing else."""
        if value is not None and not _is_fake(value) and not value.is_meta and tuple(value.shape) == tuple(fake.shape):
            self.values[fake] = value

    def known_inputs(self, func, args: tuple, kwargs: dict) -> bool:
        """Every tensor ``func`` reads has a known value (a fill reads none)."""
        if func in _FILLS:
            return True
        return all(x in self.values or _real_small(x) for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor))

    def compute(self, func, args: tuple, kwargs: dict) -> Any:
        """``func`` run on the known values, on the CPU (a constant of the model's code on a copy, so
        that an in-place op leaves it as it was); None when it does not run there."""
        fill = func in _FILLS

        def real(x):
            if isinstance(x, torch.Tensor):
                if fill:
                    return torch.empty(x.shape, dtype=x.dtype)
                v = self.values.get(x)
                return v if v is not None else x.detach().to("cpu", copy=True)
            if isinstance(x, torch.device):
                return torch.device("cpu")
            return x

        try:
            # outside every mode: the capture's fake-tensor mode would make these tensors fake
            with _disable_current_modes(), torch._C.DisableTorchFunction():
                real_args, real_kwargs = pytree.tree_map(real, (args, kwargs))
                if "device" in real_kwargs:
                    real_kwargs = dict(real_kwargs, device=torch.device("cpu"))
                return func(*real_args, **real_kwargs)
        except Exception:  # noqa: BLE001 - an op that does not run on the CPU gives no value
            return None

    def after(self, func, args: tuple, kwargs: dict, out: Any) -> None:
        """After ``func`` ran on fake tensors: compute its small outputs for real when every tensor it
        read has a known value, and remember them. An op that writes into tensors whose new values
        cannot be computed makes them, and every known value sharing their memory, unknown."""
        inputs = [x for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
        if inputs and not self.known_inputs(func, args, kwargs) and func not in _LIFTS:  # the common case: nothing to compute
            self._forget_written(func, args, kwargs)
            return
        outputs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if _no_value(func):
            self._forget_written(func, args, kwargs)
            return
        if func in _LIFTS:
            source = args[0] if args else None
            if isinstance(source, torch.Tensor) and outputs and source.numel() <= MAX_ELEMENTS:
                known = self.get(source)
                with _disable_current_modes(), torch._C.DisableTorchFunction():
                    value = known.clone() if known is not None else (source.detach().to("cpu", copy=True) if _real_small(source) else None)
                self.know(outputs[0], value)
            return
        got = None
        if (inputs or _is_creation(func)) and outputs and all(t.numel() <= MAX_DERIVED_ELEMENTS for t in outputs):
            got = self.compute(func, args, kwargs)
        values = [t for t in pytree.tree_leaves(got) if isinstance(t, torch.Tensor)] if got is not None else []
        if got is None or len(values) != len(outputs):
            self._forget_written(func, args, kwargs)
            return
        for fake, value in zip(outputs, values):
            self.know(fake, value)

    def _forget_written(self, func, args: tuple, kwargs: dict) -> None:
        """The tensors ``func`` writes (its schema's mutable arguments) no longer have known values,
        nor any known value that shares memory with theirs (a view of them, or they of it)."""
        schema = getattr(func, "_schema", None)
        if schema is None or not schema.is_mutable:
            return
        written = []
        for i, arg in enumerate(schema.arguments):
            if arg.alias_info is None or not arg.alias_info.is_write:
                continue
            value = kwargs.get(arg.name) if arg.kwarg_only or i >= len(args) else args[i]
            written += [t for t in pytree.tree_leaves(value) if isinstance(t, torch.Tensor)]
        storages = {self.values[t].untyped_storage().data_ptr() for t in written if t in self.values}
        for t in written:
            self.values.pop(t, None)
        if storages:
            for fake, value in list(self.values.items()):
                if value.untyped_storage().data_ptr() in storages:
                    self.values.pop(fake, None)


def _no_value(func) -> bool:
    """An op whose result has no values to compute: memory allocated and not written (the ``empty``
    family), or random numbers (computing them would also advance the user's generator)."""
    name = getattr(func, "_opname", "")
    return name.startswith(("empty", "new_empty")) or torch.Tag.nondeterministic_seeded in getattr(func, "tags", ())


def _real_small(t: torch.Tensor) -> bool:
    """A real tensor the model made outside the capture (a constant of its code): its values are there."""
    return not _is_fake(t) and not t.is_meta and t.numel() <= MAX_ELEMENTS


def _is_creation(func) -> bool:
    """An aten op that makes a tensor from its non-tensor arguments (arange, full, scalar_tensor)."""
    name = getattr(func, "_opname", "")
    return name in ("arange", "full", "ones", "zeros", "scalar_tensor", "eye", "tril_indices", "triu_indices")


_FAKE: type | None = None


def _is_fake(t: torch.Tensor) -> bool:
    global _FAKE
    if _FAKE is None:  # imported on first use: torch's fake-tensor module is slow to import
        from torch._subclasses.fake_tensor import FakeTensor

        _FAKE = FakeTensor
    return isinstance(t, _FAKE)
