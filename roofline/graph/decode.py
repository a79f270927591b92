"""A causal LM's decode loop as graphs: the prefill, and one step at any cache length.

Serving an LLM is a prefill over the prompt followed by one forward per new token, each reading a
key-value cache that grows by one position per step. The loop is captured as people write it: the
prompt through the model, then steps that take the output's ``past_key_values`` back in with one
token each (``use_cache=True``, an ``attention_mask`` one longer each step when the prompt had
one). The prefill and three steps are captured in one pass (``capture(..., continuations=)``);
every integer of a step's graph (the cache length in a shape, a ``cat``'s size) is fitted as an
affine function of the cache length on the three, so the step at any length is computed, not
captured (``roofline.graph.rebatch.affine_template``). A model whose step changes its structure
with the length is captured at that length instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

import torch

from roofline.errors import CaptureError, RooflineError
from roofline.graph.capture import capture, normalize_inputs
from roofline.graph.ops import CapturedGraph, CapturedOp
from roofline.graph.rebatch import NotAffine, affine_template
from roofline.graph.structure import tensors_in
from roofline.graph.values import Recipes

CAPTURED_STEPS = 3  # steps captured to fit the step graph's dependence on the cache length


class DecodeError(RooflineError):
    """The model cannot be run as a decode loop (no token input, no cache in its output)."""


def find_cache(output: Any) -> Any:
    """The key-value cache a causal LM returned: ``output.past_key_values`` (transformers'
    ``ModelOutput``), ``output["past_key_values"]``, or the second item of a tuple whose first is
    the logits."""
    cache = getattr(output, "past_key_values", None)
    if cache is None and isinstance(output, dict):
        cache = output.get("past_key_values")
    if cache is None and isinstance(output, tuple) and len(output) >= 2 and not isinstance(output[1], torch.Tensor):
        cache = output[1]
    if cache is None or not any(True for _ in tensors_in(cache)):
        raise DecodeError(
            f"--decode needs a causal LM that returns its key-value cache (past_key_values), but the model returned "
            f"{type(output).__name__} without one; use a *ForCausalLM model with use_cache on, or return (logits, cache) "
            f"and accept past_key_values= and use_cache= as keyword arguments"
        )
    return cache


def cache_bytes(cache: Any) -> int:
    """Bytes of every tensor in a cache object (its allocated length, whatever its kind)."""
    return sum(t.numel() * t.element_size() for t in tensors_in(cache))


def token_input(args: tuple, kwargs: dict) -> tuple[str | int, torch.Tensor]:
    """(where the token ids are: a keyword or a position, the ids) of a causal LM's inputs."""
    if isinstance(kwargs.get("input_ids"), torch.Tensor):
        return "input_ids", kwargs["input_ids"]
    if args and isinstance(args[0], torch.Tensor):
        return 0, args[0]
    raise DecodeError("--decode needs token ids as the first positional input or as input_ids=; the model file gives neither")


def step_inputs(args: tuple, kwargs: dict, step: int, use_cache: bool = True) -> tuple[tuple, dict]:
    """The inputs of decode step ``step`` (0-based): one new token per sequence (the prompt's last,
    repeated: the token's value does not change the work), the attention mask one position longer
    than the cache, and the prompt-only inputs (``token_type_ids``, ``position_ids``) left out."""
    where, ids = token_input(args, kwargs)
    if ids.ndim != 2:
        raise DecodeError(f"--decode needs token ids of shape (batch, prompt length); got shape {tuple(ids.shape)}")
    batch, prompt = ids.shape
    with Recipes():  # made on the inputs' device (meta): their values stay known to the capture
        return _step_inputs(args, kwargs, where, batch, prompt, ids, step, use_cache)


def _step_inputs(args: tuple, kwargs: dict, where, batch: int, prompt: int, ids: torch.Tensor, step: int, use_cache: bool) -> tuple[tuple, dict]:
    token = torch.zeros((batch, 1), dtype=ids.dtype, device=ids.device)
    new_args = tuple(token if (where == 0 and i == 0) else a for i, a in enumerate(args))
    new_kwargs = {k: v for k, v in kwargs.items() if k not in ("token_type_ids", "position_ids", "past_key_values", "use_cache")}
    if where == "input_ids":
        new_kwargs["input_ids"] = token
    mask = kwargs.get("attention_mask")
    if isinstance(mask, torch.Tensor) and mask.ndim == 2:
        new_kwargs["attention_mask"] = torch.ones((batch, prompt + step + 1), dtype=mask.dtype, device=mask.device)
    if use_cache:
        new_kwargs["use_cache"] = True
    return new_args, new_kwargs


def _link(output: Any) -> dict:
    return {"past_key_values": find_cache(output)}


def split_calls(graph: CapturedGraph) -> list[CapturedGraph]:
    """One graph per model call of a graph captured with continuations: each call's ops numbered
    from 0; a value an earlier call made (the cache) becomes an input of the call that reads it."""
    starts = list(graph.segments) + [len(graph.ops)]
    calls_before = list(graph.segment_module_calls) + [graph.module_calls]
    out: list[CapturedGraph] = []
    for call, (start, stop) in enumerate(zip(starts, starts[1:])):
        inside = lambda j: start <= j < stop  # noqa: E731
        carried: dict[str, str] = {}  # an earlier call's value -> its name in this call, in order of first read
        own_inputs = f"call.{call}.input."

        def source(name: str, producer: int) -> tuple[str, int]:
            if inside(producer):  # "op.<index>.<output>", renumbered
                return f"op.{producer - start}.{name.rsplit('.', 1)[1]}", producer - start
            if producer >= 0:
                return carried.setdefault(name, f"cache.{len(carried)}"), -1
            return ("input." + name[len(own_inputs):] if name.startswith(own_inputs) else name), -1

        numbered = [op.torch_call for op in graph.ops[start:stop] if op.torch_call is not None]
        first_call = min(numbered, default=0)  # native calls numbered from this call's first
        ops: list[CapturedOp] = []
        for op in graph.ops[start:stop]:
            ops.append(replace(
                op, index=op.index - start, torch_call=None if op.torch_call is None else op.torch_call - first_call,
                input_ops=tuple(j - start for j in op.input_ops if inside(j)),
                users=tuple(j - start for j in op.users if inside(j)),
                input_sources=tuple(source(name, p) for name, p in op.input_sources),
            ))
        out.append(replace(
            graph, ops=ops, warnings=list(graph.warnings), replay=None, segments=[0], segment_module_calls=[0],
            module_calls=calls_before[call + 1] - calls_before[call],
        ))
    return out


@dataclass
class DecodeGraphs:
    """The prefill's graph and the step graph at any cache length, with the cache's size."""

    prefill: CapturedGraph
    prompt_tokens: int
    batch: int
    cache_bytes_prefill: int  # the cache after the prefill
    cache_bytes_per_token: int  # what each step adds
    _step_at: Callable[[int], CapturedGraph]
    captured_steps: dict[int, CapturedGraph]
    derived: bool  # steps are computed from the fit (False: each length is captured)

    def step(self, cache_tokens: int) -> CapturedGraph:
        """The graph of the step that reads a cache of ``cache_tokens`` positions and adds one."""
        if cache_tokens in self.captured_steps:
            return self.captured_steps[cache_tokens]
        return self._step_at(cache_tokens)

    def cache_bytes(self, new_tokens: int) -> int:
        """The cache's bytes after the prefill and ``new_tokens`` steps."""
        return self.cache_bytes_prefill + new_tokens * self.cache_bytes_per_token


def decode_graphs(model, args: Any = (), kwargs: dict | None = None, *, device: str = "cpu", user_files: Iterable[str] | None = None) -> DecodeGraphs:
    """Capture a causal LM's prefill and its first ``CAPTURED_STEPS`` decode steps in one pass, and
    fit the step's graph over the cache length."""
    args, kwargs = normalize_inputs(args, kwargs)
    _, ids = token_input(args, kwargs)
    if ids.ndim != 2:
        raise DecodeError(f"--decode needs token ids of shape (batch, prompt length); got shape {tuple(ids.shape)}")
    batch, prompt = (int(d) for d in ids.shape)
    use_cache = accepts_use_cache(model)
    kwargs = {**kwargs, "use_cache": True} if use_cache else kwargs
    steps = [step_inputs(args, kwargs, i, use_cache) for i in range(CAPTURED_STEPS)]
    sizes: list[int] = []

    def link(output):
        cache = find_cache(output)
        sizes.append(cache_bytes(cache))
        return {"past_key_values": cache}

    graph = capture(model, args, kwargs, device=device, user_files=user_files, continuations=steps, link=link)
    calls = split_calls(graph)
    prefill, captured = calls[0], calls[1:]
    lengths = [prompt + i for i in range(CAPTURED_STEPS)]
    try:
        template = affine_template(captured, lengths)
        derived = True
    except NotAffine:
        template, derived = None, False

    def step_at(cache_tokens: int) -> CapturedGraph:
        if template is not None:
            try:
                return template(cache_tokens)
            except NotAffine:
                pass
        return _capture_step(model, args, kwargs, cache_tokens - prompt, device, user_files, use_cache)

    per_token = (sizes[-1] - sizes[0]) // (len(sizes) - 1) if len(sizes) > 1 else 0
    return DecodeGraphs(
        prefill=prefill, prompt_tokens=prompt, batch=batch, cache_bytes_prefill=sizes[0], cache_bytes_per_token=per_token,
        _step_at=step_at, captured_steps=dict(zip(lengths, captured)), derived=derived,
    )


def _capture_step(model, args: tuple, kwargs: dict, step: int, device: str, user_files, use_cache: bool) -> CapturedGraph:
    """The step at ``step`` captured: the prefill and every step up to it run again."""
    steps = [step_inputs(args, kwargs, i, use_cache) for i in range(step + 1)]
    try:
        graph = capture(model, args, kwargs, device=device, user_files=user_files, continuations=steps, link=_link)
    except CaptureError as e:
        raise DecodeError(f"decode step {step} could not be captured: {e}") from None
    return split_calls(graph)[-1]


def accepts_use_cache(model) -> bool:
    """Whether the model's forward takes ``use_cache=`` (transformers' models do)."""
    import inspect

    try:
        params = inspect.signature(model.forward if isinstance(model, torch.nn.Module) else model).parameters
    except (TypeError, ValueError):
        return False
    return "use_cache" in params
