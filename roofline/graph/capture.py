"""Capture a model's forward pass as an ordered list of aten ops, without real memory.

``capture(model, args, kwargs)`` runs one forward under a ``FakeTensorMode`` with a recording
dispatch mode on top of it: parameters, buffers, tensor attributes and inputs are replaced by fake
tensors of the same shape, dtype and strides (on the CPU, or on the GPU the prediction is for when
this machine has it), the model is called through ``torch.func.functional_call``, and every aten op
that reaches the dispatcher is recorded with its arguments' metadata, as it runs. Fake tensors carry
metadata only, so a 1.5-billion-parameter model built on the meta device captures in a few hundred
MB. Because the model really runs, Python loops, shape-dependent branches, keyword inputs and any
output structure (tuples, dicts, ``ModelOutput`` dataclasses, cache objects) need no special support.

Code that needs tensor *values* (``if x.sum() > 0``, ``.item()``, ``.tolist()``, ``nonzero``) cannot
run on fake tensors. Given ``materialize`` (a zero-argument callable returning a real ``(model, args,
kwargs)``), capture then runs the model for real on the CPU (``capture_mode="real"``) and says why
in ``warnings``; without it, it raises ``CaptureError`` naming the user's line.

Where each op comes from (module path, user's line, native torch call) is recorded by
``roofline.graph.provenance`` while the op runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Callable, Iterable, Sequence

import torch
from torch import nn
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.weak import WeakIdKeyDictionary

from roofline.errors import CaptureError, RooflineError
from roofline.graph import failures
from roofline.graph.ops import CapturedGraph, CapturedOp, TensorMeta
from roofline.graph.provenance import (
    FrameLocator,
    ModuleTracker,
    TorchCalls,
    call_model,
    module_names,
    named_state,
    preferred_files,
    quiet_torch_logs,
    set_eval,
    unique_bytes,
)
from roofline.graph.guards import LibraryGuards
from roofline.graph.pycalls import PythonCalls
from roofline.graph.structure import map_tensors, tensors_in
from roofline.graph.training import StepRun, TrainStep, training_mode
from roofline.graph.values import MAX_DERIVED_ELEMENTS, Shadow, value_of

__all__ = ["capture", "normalize_inputs"]

Materializer = Callable[[], tuple]  # () -> (model, args) or (model, args, kwargs), real CPU tensors


def capture(
    model: Callable[..., Any],
    example_inputs: Any = (),
    kwargs: dict | None = None,
    *,
    materialize: Materializer | None = None,
    inference: bool = True,
    user_files: Iterable[str | os.PathLike] | None = None,
    device: str = "cpu",
    real: bool = False,
    continuations: Sequence[tuple[tuple, dict]] = (),
    link: Callable[[Any], dict] | None = None,
    train: TrainStep | None = None,
) -> CapturedGraph:
    """Capture one forward pass of ``model(*example_inputs, **kwargs)`` as aten ops.

    ``real=True`` runs the model on the real CPU tensors it is given instead of fake ones: for a
    model small enough to run in milliseconds, which then needs none of the fake-tensor machinery.

    ``device`` is where the fake tensors live ('cpu' by default, which works on any machine;
    'cuda' on a GPU machine records the ops a GPU run dispatches, e.g. its attention backend).

    ``model`` is an ``nn.Module`` (parameters real or on the meta device) or any callable.
    ``example_inputs`` is a tuple of positional inputs (a single tensor or a list is accepted),
    ``kwargs`` a dict of keyword inputs. ``materialize``, if given, returns real CPU ``(model,
    args[, kwargs])``; it is called only when the model needs tensor values (data-dependent control
    flow), or uses a meta-device tensor that is not a parameter or buffer, and then the model runs
    for real. ``inference=True`` (the default) captures ``model.eval()`` under ``torch.no_grad()``;
    the modules' training flags are restored afterwards. ``user_files`` names files (e.g. the model
    file) whose lines are preferred for ``CapturedOp.source``.

    ``continuations`` are further calls of the model in the same capture, each with its own
    ``(args, kwargs)`` updated by ``link(previous call's output)`` (a decode step takes the cache the
    call before returned); ``CapturedGraph.segments`` then says where each call's ops start.

    ``train`` captures one training step instead (``roofline.graph.training``): the model in train
    mode, the forward, the loss, the backward pass and the optimizer step, each op marked with its
    ``phase``; ``CapturedGraph.training`` says what the step holds. Its implementation must be
    resolved (``TrainStep.for_device``).
    """
    if not callable(model):
        raise CaptureError(f"the model must be an nn.Module or a callable, got {type(model).__name__}; pass the module itself")
    args, kwargs = normalize_inputs(example_inputs, kwargs)
    if train is not None:
        inference = False
        if continuations:
            raise CaptureError("a training step is one call of the model; capture a decode loop without --train")
    locator = FrameLocator(preferred_files(model, user_files))
    then = _Continuations(continuations, link)
    if real:
        try:
            graph = _trace(model, args, kwargs, fake=False, inference=inference, locator=locator, then=then, train=train)
        except _TraceFailed as failed:
            exc = failed.error
            raise CaptureError(f"capture failed at {failures.describe_location(exc, locator)}: {failures.summary(exc)}; {failures.hint(exc)}") from None
        value_ops = sorted({op.name for op in graph.ops if _reads_values(op.target)})
        if value_ops:
            graph.warnings.append(
                f"{', '.join(value_ops)} read tensor values: the ops are those of the example inputs' values (captured on real CPU tensors)"
            )
        return graph

    try:
        return _trace(model, args, kwargs, fake=True, inference=inference, locator=locator, device=device, then=then, train=train)
    except _TraceFailed as failed:
        fake_failure, used_known_values = failed.error, failed.used_known_values
    if used_known_values:
        # The model took another path because it read values the capture knew (a library's fast
        # path for an all-ones mask), and failed there: capture it as fake tensors alone allow.
        try:
            graph = _trace(model, args, kwargs, fake=True, inference=inference, locator=locator, device=device, then=then, train=train,
                           known_values=False)
        except _TraceFailed as failed_again:
            fake_failure = failed_again.error
        else:
            graph.warnings.append(
                f"the path a real run of these inputs' values takes failed under capture at {failures.describe_location(fake_failure, locator)} "
                f"({failures.summary(fake_failure)}); captured the path taken without them, which may differ from a real run's"
            )
            return graph
    if continuations:  # the loop of calls runs on fake tensors only
        raise CaptureError(
            f"capture failed at {failures.describe_location(fake_failure, locator)}: {failures.summary(fake_failure)}; {failures.hint(fake_failure)}"
        ) from None

    where = failures.describe_location(fake_failure, locator)
    data_op = failures.data_dependent_op(fake_failure)
    if data_op is not None:
        need = f"{where}: {data_op} {failures.gloss(data_op)}"
        if materialize is None:
            raise CaptureError(
                f"{need}; fake tensors have no values, so this cannot be captured without "
                f"memory: capture with real CPU tensors (capture(..., materialize=...), "
                f"e.g. LoadedModel.materializer()), or make the code depend on shapes only"
            ) from None
        warning = (
            f"{need}; captured by running the model once on real CPU tensors "
            f"(capture_mode 'real'): the ops are those of these inputs' values"
        )
        return _capture_real(materialize, warning, inference, locator, train)

    if materialize is not None and failures.involves_meta(fake_failure):
        warning = (
            f"{where}: a tensor on the meta device that is not a parameter, buffer or tensor "
            f"attribute of a module ({failures.summary(fake_failure)}); captured by running the "
            f"model once on real CPU tensors (capture_mode 'real')"
        )
        return _capture_real(materialize, warning, inference, locator, train)

    raise CaptureError(f"capture failed at {where}: {failures.summary(fake_failure)}; {failures.hint(fake_failure)}") from None


def normalize_inputs(example_inputs: Any, kwargs: dict | None = None) -> tuple[tuple, dict]:
    """(positional, keyword) inputs: a tuple, a list or a single tensor of positional inputs, or a
    dict of keyword inputs, and optionally keyword inputs beside them."""
    if isinstance(example_inputs, dict) and kwargs is None:
        example_inputs, kwargs = (), example_inputs
    if isinstance(example_inputs, list):
        example_inputs = tuple(example_inputs)
    elif isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if not isinstance(example_inputs, tuple):
        raise CaptureError(
            f"example_inputs must be a tuple of the model's positional inputs or a dict of its keyword inputs, "
            f"got {type(example_inputs).__name__}; pass (x,) for a single input"
        )
    if kwargs is not None and not (isinstance(kwargs, dict) and all(isinstance(k, str) for k in kwargs)):
        raise CaptureError(f"keyword inputs must be a dict of argument names to values, got {type(kwargs).__name__}")
    return example_inputs, dict(kwargs or {})


def _capture_real(materialize: Materializer, warning: str, inference: bool, locator: FrameLocator, train: TrainStep | None = None) -> CapturedGraph:
    try:
        got = materialize()
        model, args, kwargs = (*got, None) if len(got) == 2 else got
    except RooflineError:  # e.g. the model file's own ModelFileError: already one line
        raise
    except Exception as exc:  # noqa: BLE001
        raise CaptureError(
            f"the model needs real tensors ({warning.split(';')[0]}), but materializing it "
            f"failed: {failures.summary(exc)}; check that the model builds on the CPU"
        ) from None
    args, kwargs = normalize_inputs(args, kwargs)
    if isinstance(model, nn.Module):
        for name, t in named_state(model):
            if t.is_meta:
                raise CaptureError(
                    f"materialize returned a model whose `{name}` is on the meta device; "
                    f"build it with real tensors (load the model file with materialize=True)"
                )
    try:
        graph = _trace(model, args, kwargs, fake=False, inference=inference, locator=locator, train=train)
    except _TraceFailed as failed:
        exc = failed.error
        raise CaptureError(
            f"capture with real tensors failed at {failures.describe_location(exc, locator)}: "
            f"{failures.summary(exc)}; {failures.hint(exc)}"
        ) from None
    graph.warnings.insert(0, warning)
    return graph


class _Continuations:
    """Calls of the model after the first, in the same capture: inputs, and how each takes what the
    call before it returned."""

    def __init__(self, calls: Sequence[tuple[tuple, dict]] = (), link: Callable[[Any], dict] | None = None):
        self.calls, self.link = list(calls), link


class _TraceFailed(Exception):
    """The model raised while running under capture; ``error`` is what it raised, ``used_known_values``
    whether the run had read a known value or told a library that a tensor was not traced before (the
    path it failed on may be one that fake tensors alone would not have taken)."""

    def __init__(self, error: BaseException, used_known_values: bool = False):
        super().__init__(str(error))
        self.error = error
        self.used_known_values = used_known_values


def _trace(model, args: tuple, kwargs: dict, *, fake: bool, inference: bool, locator: FrameLocator, device: str = "cpu",
           then: _Continuations | None = None, train: TrainStep | None = None, known_values: bool = True) -> CapturedGraph:
    is_module = isinstance(model, nn.Module)
    named = named_state(model) if is_module else []
    trainable = {id(p) for p in model.parameters() if p.requires_grad} if (is_module and train is not None) else set()
    if fake:
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode(allow_non_fake_inputs=True)

        def convert(x: torch.Tensor) -> torch.Tensor:
            with mode:
                return torch.empty_strided(tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=device)
    else:
        mode = contextlib.nullcontext()

        def convert(x: torch.Tensor) -> torch.Tensor:
            # a training step changes its state (the optimizer, batch norm's statistics): on a copy
            return x.detach().clone() if train is not None else x.detach()

    def convert_state(x: torch.Tensor) -> torch.Tensor:
        t = convert(x)
        return t.requires_grad_() if id(x) in trainable else t

    fakes: dict[int, torch.Tensor] = {}  # a tied weight is one tensor under two names
    state = {name: fakes[id(t)] if id(t) in fakes else fakes.setdefault(id(t), convert_state(t)) for name, t in named}
    params = [fakes[i] for i in dict.fromkeys(id(t) for _, t in named if id(t) in trainable)]
    originals: list[tuple[torch.Tensor, torch.Tensor]] = []  # (what the caller gave, what the model gets)

    def convert_input(x: torch.Tensor) -> torch.Tensor:
        t = convert(x)
        originals.append((x, t))
        return t

    run_args = map_tensors(args, convert_input)
    run_kwargs = map_tensors(kwargs, convert_input)

    tracker = ModuleTracker(module_names(model) if is_module else {})
    calls = TorchCalls()
    # the values of small tensors the capture knows (fake tensors only; real ones have theirs)
    shadow = Shadow() if (fake and known_values and train is None) else None
    guards = LibraryGuards(shadow) if shadow is not None else None
    pycalls = PythonCalls()
    recorder = _Recorder(locator, tracker, calls, pycalls, shadow, guards)
    calls.on_whole = recorder.record_whole
    calls.on_host_read = recorder.host_read
    if train is not None:
        calls.on_return = recorder.torch_call_returned
    seen_state = set()
    for name, t in state.items():
        if id(t) not in seen_state:
            seen_state.add(id(t))
            recorder.name_value(t, f"state.{name}")
    inputs = list(tensors_in((run_args, run_kwargs)))
    for i, t in enumerate(inputs):
        recorder.name_value(t, f"input.{i}")
    then = then or _Continuations()
    later = [(map_tensors(a, convert_input), map_tensors(k, convert_input)) for a, k in then.calls]
    if shadow is not None:
        for original, t in originals:
            shadow.know(t, value_of(original))
        for name, original in named:
            shadow.know(state[name], value_of(original))
    for c, call in enumerate(later):
        for i, t in enumerate(tensors_in(call)):
            recorder.name_value(t, f"call.{c + 1}.input.{i}")
    segments, segment_calls = [0], [0]

    grad = torch.no_grad() if inference else (torch.enable_grad() if train is not None else contextlib.nullcontext())
    restore_training = set_eval(model) if (is_module and inference) else (lambda: None)
    step = None
    try:
        with mode, grad, training_mode(model if train is not None else None), tracker.installed(), quiet_torch_logs(), \
                guards if guards is not None else contextlib.nullcontext(), calls, recorder, pycalls:
            try:
                if train is not None:
                    step = StepRun(train, params, recorder)
                with step.autocast() if step is not None else contextlib.nullcontext():
                    result = call_model(model, is_module, state, run_args, run_kwargs)
                if step is not None:
                    step.finish(result, run_args, run_kwargs)
                for a, k in later:
                    recorder.mark_returned(result)
                    segments.append(len(recorder.ops))
                    segment_calls.append(tracker.calls)
                    result = call_model(model, is_module, state, a, {**k, **then.link(result)} if then.link else k)
            except RooflineError:  # ours, already one line (a decode loop's output without a cache)
                raise
            except Exception as exc:  # the user's code (or torch on its behalf) failed
                raise _TraceFailed(exc, used_known_values=recorder.values_read > 0 or (guards is not None and guards.flipped)) from exc
    finally:
        restore_training()

    graph = recorder.graph(result)
    if graph.ops:  # the model's Python after its last op (output objects) is host time of the run too
        graph.ops[-1].python_calls += pycalls.take()
    graph.inputs = [TensorMeta.of(t) for t in inputs]
    graph.parameters_bytes = unique_bytes(t for _, t in named)
    graph.module_calls = tracker.calls
    graph.state_tensors = len(seen_state)
    graph.host_reads = list(dict.fromkeys(recorder.host_reads))
    graph.library_checks = list(dict.fromkeys(recorder.library_checks))
    graph.library_check_ops = list(recorder.library_check_ops)
    if recorder.user_values_read:
        graph.warnings.append(
            f"the model read {recorder.user_values_read} tensor value(s) into Python (a branch on its inputs' values); the capture "
            "answered from the example inputs' known values, so the ops are those a real run of these inputs makes"
        )
    graph.capture_mode = "fake" if fake else "real"
    graph.segments = segments
    graph.segment_module_calls = segment_calls
    graph.training = step.info() if step is not None else None
    graph.replay = _ReplayPlan(
        inputs=len(inputs), state=[name for name in state], constants=recorder.constants, real=not fake,
    )
    return graph


_UNANSWERED = object()

# Ops that ask a tensor about itself and launch nothing (``t.device`` on a fake tensor): not part
# of the program.
_QUERIES = {torch.ops.prim.device.default}
# torch.profiler's record_function markers (the optimizers' step runs inside one): no work
_MARKERS = ("profiler.",)


class _Recorder(TorchDispatchMode):
    """Records every aten op that reaches the dispatcher, in order, with its arguments' metadata
    and, for each tensor argument, the value it is: an input, a piece of the model's state, an
    earlier op's output, or a constant the model made from outside the capture."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's handler so that torch.compile never traces it, at the cost of a
        # wrapper call on every op; no compile runs while a model is captured
        return False

    def __init__(self, locator: FrameLocator, tracker: ModuleTracker, calls: TorchCalls, pycalls: PythonCalls,
                 shadow: Shadow | None = None, guards: LibraryGuards | None = None):
        super().__init__()
        self.locator, self.tracker, self.calls = locator, tracker, calls
        self.pycalls = pycalls
        self.shadow, self.guards = shadow, guards
        # reads a library makes only in eager runs (roofline.graph.guards): where, as host_reads says
        # it, and the ops that read
        self.library_checks: list[str] = []
        self.library_check_ops: list[int] = []
        self._library_read = False
        self.values_read = 0  # reads of tensor values into Python the shadow answered
        self.user_values_read = 0  # of them, reads of the model's own code (not a library's check)
        # tensor -> (value name, producing op or -1), held weakly: a reference of ours would make
        # torch's factory bindings detach their result (a shared tensor), an op eager never runs
        self.values = WeakIdKeyDictionary()
        self.ops: list[CapturedOp] = []
        self.constants: dict[str, Any] = {}  # value name -> the tensor (real capture) or its TensorMeta
        self.suspended = False
        self.host_reads: list[str] = []  # "`.item()` at model.py:12", in order
        self.phase = "forward"  # of a training step (roofline.graph.training)
        # autograd node -> (module, module type, source) of the forward op that made it: a backward
        # op is attributed to the forward op whose node autograd is running
        self.origin: dict[Any, tuple[str, str, str | None]] = {}
        # values that live on the host's CPU whatever the model's device: an optimizer's step counts
        self.host_scalars: set[str] = set()

    @contextlib.contextmanager
    def paused(self):
        """Run torch code without recording it (work that is not part of the program priced): its ops
        and its Python."""
        was, self.suspended = self.suspended, True
        self.pycalls.off()
        try:
            yield
        finally:
            self.suspended = was
            self.pycalls.on()

    @contextlib.contextmanager
    def in_module(self, name: str):
        """Attribute the ops run inside to a pseudo-module ``name`` (the loss of a training step)."""
        self.tracker.stack.append((name, name))
        try:
            yield
        finally:
            self.tracker.stack.pop()

    def host_read(self, what: str) -> None:
        """The model read tensor values into Python (``TorchCalls.on_host_read``). An optimizer's
        reads are of its step counts, CPU scalars: no wait for a device."""
        if self.phase == "optimizer" or self.suspended:
            return
        frame = sys._getframe(2)
        try:
            source = self.locator.find(frame)
        except Exception:  # noqa: BLE001 - provenance is best effort, never fatal
            source = None
        if self.guards is not None and self.guards.in_library(frame):
            self.library_checks.append(f"{what} at {source}" if source else what)
            self._library_read = True  # the value-reading op that follows is the check's
            return
        self.host_reads.append(f"{what} at {source}" if source else what)

    def record_whole(self, target, func, args: tuple, kwargs: dict):
        """Run ``func`` (a whole recurrent stack) and record it as the one op ``target``, not the
        ops it decomposes into here."""
        self.suspended = True
        try:
            out = func(*args, **kwargs)
        finally:
            self.suspended = False
        with torch._C.DisableTorchFunction():
            self._record(target, args, kwargs, out)
        return out

    def name_value(self, t: torch.Tensor, name: str, producer: int = -1) -> None:
        self.values[t] = (name, producer)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.pycalls.off()  # the fake tensors' and the recorder's own Python is not the model's
        try:
            return self._dispatch(func, args, kwargs or {})
        finally:
            self.pycalls.on()

    def _dispatch(self, func, args: tuple, kwargs: dict):
        if self.shadow is not None and _reads_values(func) and self.shadow.known_inputs(func, args, kwargs):
            out = self._answer(func, args, kwargs)
            if out is not _UNANSWERED:
                library, self._library_read = self._library_read, False
                self.user_values_read += not library
                if not self.suspended:
                    with torch._C.DisableTorchFunction():
                        self._record(func, args, kwargs, out)
                    if library:
                        self.library_check_ops.append(len(self.ops) - 1)
                return out
        out = func(*args, **kwargs)
        if self.shadow is not None:
            self.shadow.after(func, args, kwargs, out)
        if func not in _QUERIES and not self.suspended and not str(func).startswith(_MARKERS):
            with torch._C.DisableTorchFunction():  # our own reads of the tensors are not the model's calls
                self._record(func, args, kwargs, out)
        return out

    def _answer(self, func, args: tuple, kwargs: dict):
        """An op that reads values (``.item()``, ``nonzero``) on tensors whose values are known: its
        result from them, as a Python number, or fake tensors of the shapes the values give."""
        got = self.shadow.compute(func, args, kwargs)
        leaves = pytree.tree_leaves(got)
        if got is None or any(isinstance(t, torch.Tensor) and t.numel() > MAX_DERIVED_ELEMENTS for t in leaves):
            return _UNANSWERED
        self.values_read += 1
        device = next((x.device for x in pytree.tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)), None)

        def fake(value):
            if not isinstance(value, torch.Tensor):
                return value
            made = torch.empty_strided(tuple(value.shape), tuple(value.stride()), dtype=value.dtype, device=device)
            self.shadow.know(made, value)
            return made

        return pytree.tree_map(fake, got)

    def _source_of(self, t: torch.Tensor) -> tuple[str, int]:
        found = self.values.get(t)
        if found is None:  # a tensor from outside the capture (a global, or one made from data)
            name = f"const.{len(self.constants)}"
            self.constants[name] = t if not _is_fake(t) else TensorMeta.of(t)
            self.name_value(t, name)
            found = self.values[t]
        return found

    def _record(self, func, args: tuple, kwargs: dict, out) -> None:
        index = len(self.ops)
        sources: list[tuple[str, int]] = []

        def meta(x):
            if isinstance(x, torch.Tensor):
                sources.append(self._source_of(x))
                return _tensor_meta(x)
            if isinstance(x, (list, tuple)):
                converted = [meta(y) for y in x]
                return converted if isinstance(x, list) else tuple(converted)
            if isinstance(x, dict):
                return {k: meta(v) for k, v in x.items()}
            return _concrete(x)

        margs = tuple(meta(a) for a in args)
        mkwargs = {k: meta(v) for k, v in kwargs.items()}
        outputs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        module, module_type = self.tracker.stack[-1] if self.tracker.stack else ("", "")
        grad_of = ""
        if self.phase == "backward":  # no module runs: the forward op's module and line, by autograd's node
            node = torch._C._current_autograd_node() if hasattr(torch._C, "_current_autograd_node") else None
            grad_of, module_type, source = self.origin.get(node, ("", "", None))
            module = ""
        else:
            try:
                source = self.locator.find(sys._getframe(2))
            except Exception:  # noqa: BLE001 - provenance is best effort, never fatal
                source = None
        python_calls = self.pycalls.take()
        host_scalar = self.phase == "optimizer" and bool(sources) and all(
            name in self.host_scalars or (name.startswith("const.") and t.ndim == 0)
            for (name, _), t in zip(sources, _flat_tensors(args, kwargs))
        ) and all(t.ndim == 0 for t in outputs)
        self.ops.append(
            CapturedOp(
                index=index, target=func, args=margs, kwargs=mkwargs, outputs=tuple(_tensor_meta(t) for t in outputs),
                module=module, module_type=module_type, source=source, torch_call=self.calls.current,
                input_ops=tuple(sorted({p for _, p in sources if p >= 0})), input_sources=tuple(sources),
                phase=self.phase, grad_of=grad_of, host_scalar=host_scalar, python_calls=python_calls,
                records_grad=self.phase == "forward" and torch.is_grad_enabled() and any(
                    t.requires_grad for t in _flat_tensors(args, kwargs)),
            )
        )
        for k, t in enumerate(outputs):
            self.name_value(t, f"op.{index}.{k}", index)
            if host_scalar:
                self.host_scalars.add(f"op.{index}.{k}")

    def torch_call_returned(self, result) -> None:
        """A torch call of the model's code returned (``TorchCalls.on_return``): the autograd nodes
        it made (its outputs' ``grad_fn`` and the new nodes behind them) belong to the module and line
        of its last op, which is where their backward ops are attributed."""
        if self.phase != "forward" or not self.ops:
            return
        last = self.ops[-1]
        where = (last.module, last.module_type, last.source)
        stack = [t.grad_fn for t in tensors_in(result) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or node in self.origin:
                continue
            self.origin[node] = where
            stack.extend(n for n, _ in node.next_functions if n is not None)

    def mark_returned(self, result) -> None:
        """Mark the ops whose values a model call returned (every call's, in a loop of calls)."""
        for t in tensors_in(result):
            found = self.values.get(t)
            if found is not None and found[1] >= 0:
                self.ops[found[1]].is_output = True

    def graph(self, result) -> CapturedGraph:
        """The recorded ops as a ``CapturedGraph``: consumers filled in, and the ops whose values
        the model returned marked as outputs."""
        users: list[set[int]] = [set() for _ in self.ops]
        for op in self.ops:
            for j in op.input_ops:
                users[j].add(op.index)
        for op, u in zip(self.ops, users):
            op.users = tuple(sorted(u))
        outputs = [_tensor_meta(t) for t in tensors_in(result)]
        self.mark_returned(result)
        return CapturedGraph(ops=self.ops, outputs=outputs)


class _ReplayPlan:
    """What ``roofline.graph.replay`` needs besides the ops: how many inputs, the state's names in
    the order the capture named them, and the constants (real tensors, or metadata only)."""

    def __init__(self, inputs: int, state: list[str], constants: dict[str, Any], real: bool):
        self.inputs, self.state, self.constants, self.real = inputs, state, constants, real


def _reads_values(target) -> bool:
    """An op whose result depends on tensor values, not only on shapes (``.item()``, ``nonzero``)."""
    tags = getattr(target, "tags", ())
    return torch.Tag.data_dependent_output in tags or torch.Tag.dynamic_output_shape in tags


def _flat_tensors(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensor arguments of a call in the order ``_record`` names their sources."""
    found: list[torch.Tensor] = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            found.append(x)
        elif isinstance(x, (list, tuple)):
            for y in x:
                walk(y)
        elif isinstance(x, dict):
            for y in x.values():
                walk(y)

    walk(args)
    walk(kwargs)
    return found


def _is_fake(t: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


def _concrete(x):
    if isinstance(x, torch.SymInt):
        return int(x)
    if isinstance(x, torch.SymFloat):
        return float(x)
    if isinstance(x, torch.SymBool):
        return bool(x)
    return x


def _tensor_meta(t: torch.Tensor) -> TensorMeta:
    try:
        return TensorMeta.of(t)
    except (RuntimeError, NotImplementedError):  # sparse and other layouts without strides
        return TensorMeta.contiguous(tuple(t.shape), t.dtype, t.device.type)
