"""Capture a model's forward pass as an ordered list of aten ops, without real memory.

``capture(model, example_inputs)`` traces one forward with ``make_fx`` under a ``FakeTensorMode``:
parameters, buffers and inputs are replaced by fake CPU tensors of the same shape, dtype and
strides (made with ``torch.empty_strided`` inside the fake mode), and the model is called through
``torch.func.functional_call``. Fake tensors carry metadata only, so a 1.5-billion-parameter model
built on the meta device captures in a few hundred MB of host memory. Because ``make_fx`` records
what actually executes, Python loops and shape-dependent branches need no special support.

Code that needs tensor *values* (``if x.sum() > 0``, ``.item()``, ``.tolist()``, ``nonzero``)
cannot run on fake tensors. Given ``materialize`` (a zero-argument callable returning a real
``(model, example_inputs)``), capture then runs the model for real on the CPU
(``capture_mode="real"``) and says why in ``warnings``; without it, it raises ``CaptureError``
naming the user's line.

Where each op comes from: ``module``/``module_type`` are read from ``nn_module_stack``
(``record_module_stack=True``), and ``source`` from the Python stack at the moment each node is
created (the innermost frame in the user's code), recorded by this module itself because the
stack traces ``make_fx`` keeps differ between torch versions (none before 2.8; later ones keep
only frames of functions named ``forward``).
"""

from __future__ import annotations

import contextlib
import inspect
import linecache
import logging
import operator
import os
import re
import sys
import sysconfig
import traceback
from typing import Any, Callable, Iterable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree

from roofline.errors import CaptureError, RooflineError
from roofline.ops import CapturedGraph, CapturedOp, TensorMeta, op_name

__all__ = ["capture"]

_SOURCE_KEY = "roofline_source"  # node.meta key: "file.py:LINE" of the user's line
_MODULE_KEY = "roofline_module"  # node.meta key: (path, type) from our own module stack
_CALL_KEY = "roofline_torch_call"  # node.meta key: number of the native (C++) torch call that made the node

# Pseudo-filenames of interactive code, which is the user's (fx's generated code is not).
_INTERACTIVE = ("<stdin>", "<string>", "<console>", "<ipython-input")

# Exceptions (by class name, so that torch versions which move them still match) raised when
# code needs tensor values that fake tensors do not have.
_DATA_DEPENDENT = {
    "DataDependentOutputException",
    "DynamicOutputShapeException",
    "GuardOnDataDependentSymNode",
    "PendingUnbackedSymbolNotFound",
}


# --------------------------------------------------------------------------------------------
# public API


def capture(
    model: Callable[..., Any],
    example_inputs: Any,
    *,
    materialize: Callable[[], tuple[Any, Any]] | None = None,
    inference: bool = True,
    user_files: Iterable[str | os.PathLike] | None = None,
    device: str = "cpu",
) -> CapturedGraph:
    """Capture one forward pass of ``model(*example_inputs)`` as aten ops.

    ``device`` is where the fake tensors live ('cpu' by default, which works on any machine;
    'cuda' on a GPU machine records the ops a GPU run dispatches, e.g. its attention backend).

    ``model`` is an ``nn.Module`` (parameters real or on the meta device) or any callable.
    ``example_inputs`` is a tuple of positional inputs (a single tensor or a list is accepted).
    ``materialize``, if given, returns a real ``(model, example_inputs)`` on the CPU; it is
    called only when the model needs tensor values (data-dependent control flow), or uses a
    meta-device tensor that is not a parameter or buffer, and then the model runs for real.
    ``inference=True`` (the default) captures ``model.eval()`` under ``torch.no_grad()``; the
    modules' training flags are restored afterwards. ``user_files`` names files (e.g. the
    model file) whose lines are preferred for ``CapturedOp.source``.
    """
    if not callable(model):
        raise CaptureError(
            f"the model must be an nn.Module or a callable, got {type(model).__name__}; "
            f"pass the module itself"
        )
    inputs = _normalize_inputs(example_inputs)
    locator = _FrameLocator(_preferred_files(model, user_files))

    try:
        return _trace(model, inputs, mode="fake", inference=inference, locator=locator, device=device)
    except _TraceFailed as failed:
        fake_failure = failed.error
    if isinstance(model, nn.Module) and _data_dependent_op(fake_failure) is None:
        # make_fx's module-stack tracer wraps attribute access and has had bugs with unusual
        # modules; without it, module paths come from our forward hooks instead.
        try:
            return _trace(model, inputs, mode="fake", inference=inference, locator=locator,
                          module_stack=False, device=device)
        except _TraceFailed:
            pass

    where = _describe_location(fake_failure, locator)
    data_op = _data_dependent_op(fake_failure)
    if data_op is not None:
        need = f"{where}: {data_op} {_gloss(data_op)}"
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
        return _capture_real(materialize, warning, inference, locator)

    if materialize is not None and _involves_meta(fake_failure):
        warning = (
            f"{where}: a tensor on the meta device that is not a parameter, buffer or tensor "
            f"attribute of a module ({_summary(fake_failure)}); captured by running the "
            f"model once on real CPU tensors (capture_mode 'real')"
        )
        return _capture_real(materialize, warning, inference, locator)

    raise CaptureError(
        f"capture failed at {where}: {_summary(fake_failure)}; {_hint(fake_failure)}"
    ) from None


# --------------------------------------------------------------------------------------------
# tracing


def _capture_real(materialize, warning: str, inference: bool, locator) -> CapturedGraph:
    try:
        got = materialize()
        model, inputs = got
    except RooflineError:  # e.g. the model file's own ModelFileError: already one line
        raise
    except Exception as exc:  # noqa: BLE001
        raise CaptureError(
            f"the model needs real tensors ({warning.split(';')[0]}), but materializing it "
            f"failed: {_summary(exc)}; check that the model builds on the CPU"
        ) from None
    inputs = _normalize_inputs(inputs)
    if isinstance(model, nn.Module):
        for name, t in _named_state(model):
            if t.is_meta:
                raise CaptureError(
                    f"materialize returned a model whose `{name}` is on the meta device; "
                    f"build it with real tensors (load the model file with materialize=True)"
                )
    try:
        graph = _trace(model, inputs, mode="real", inference=inference, locator=locator)
    except _TraceFailed as failed:
        exc = failed.error
        raise CaptureError(
            f"capture with real tensors failed at {_describe_location(exc, locator)}: "
            f"{_summary(exc)}; {_hint(exc)}"
        ) from None
    graph.warnings.insert(0, warning)
    return graph


class _TraceFailed(Exception):
    """make_fx raised while running the user's model; ``error`` is what it raised."""

    def __init__(self, error: BaseException):
        super().__init__(str(error))
        self.error = error


def _trace(
    model, inputs: tuple, *, mode: str, inference: bool, locator, module_stack: bool = True,
    device: str = "cpu",
) -> CapturedGraph:
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    is_module = isinstance(model, nn.Module)
    named = _named_state(model) if is_module else []
    parameters_bytes = _unique_bytes(t for _, t in named)

    if mode == "fake":
        fake_mode = FakeTensorMode(allow_non_fake_inputs=True)

        def convert(x):
            if not isinstance(x, torch.Tensor):
                return x
            with fake_mode:
                return torch.empty_strided(
                    tuple(x.shape), tuple(x.stride()), dtype=x.dtype, device=device
                )

    else:

        def convert(x):
            return x.detach() if isinstance(x, torch.Tensor) else x

    state = {name: convert(t) for name, t in named}
    traced_inputs = pytree.tree_map(convert, inputs)

    grad_ctx = torch.no_grad if inference else contextlib.nullcontext

    def forward(state, *args):
        with grad_ctx():
            return _call_model(model, is_module, state, args)

    if is_module and module_stack:
        forward._orig_mod = model  # make_fx's module-stack tracer scopes paths to this root

    wanted = {
        "tracing_mode": mode,
        "_allow_non_fake_inputs": mode == "fake",
        "record_module_stack": is_module and module_stack,
        # real mode: let .item() and friends read the real values (and record the op)
        "_error_on_data_dependent_ops": mode == "fake",
        # torch >= 2.8 only; keeps node.meta["stack_trace"] for users of graph_module (our
        # own ``source`` does not depend on it)
        "record_stack_traces": True,
    }
    supported = _make_fx_keywords()
    kwargs = {k: v for k, v in wanted.items() if k in supported}

    module_names = _module_names(model) if is_module else {}
    tracker = _ModuleTracker(module_names)
    calls = _TorchCalls()
    restore_training = _set_eval(model) if (is_module and inference) else (lambda: None)
    try:
        with tracker.installed(), _record_sources(locator, tracker, calls), _quiet_torch_logs(), calls:
            try:
                gm = make_fx(forward, **kwargs)(state, *traced_inputs)
            except Exception as exc:  # the user's code (or torch on its behalf) failed
                raise _TraceFailed(exc) from exc
    finally:
        restore_training()

    graph = _to_captured(gm, traced_inputs)
    graph.parameters_bytes = parameters_bytes
    graph.module_calls = tracker.calls
    graph.state_tensors = len({id(t) for _, t in named})
    graph.capture_mode = mode
    return graph


def _call_model(model, is_module: bool, state: dict, args: tuple):
    """The boundary of the user's code: frames inside this call are the model's, outside not."""
    if is_module:
        return torch.func.functional_call(model, state, args, strict=False)
    return model(*args)


_CALL_MODEL_CODE = _call_model.__code__

_MAKE_FX_KEYWORDS: frozenset[str] | None = None


def _make_fx_keywords() -> frozenset[str]:
    """Keywords this torch's make_fx accepts.

    torch 2.5-2.7: tracing_mode, _allow_non_fake_inputs, pre_dispatch, record_module_stack,
    _allow_fake_constant, _error_on_data_dependent_ops. 2.8 added record_stack_traces (its
    traces keep only frames of functions named ``forward``); 2.13 also has
    proxy_module_inputs and _disable_torch_fn_metadata_mode.
    """
    global _MAKE_FX_KEYWORDS
    if _MAKE_FX_KEYWORDS is None:
        from torch.fx.experimental.proxy_tensor import make_fx

        try:
            _MAKE_FX_KEYWORDS = frozenset(inspect.signature(make_fx).parameters)
        except (TypeError, ValueError):
            _MAKE_FX_KEYWORDS = frozenset({"tracing_mode", "_allow_non_fake_inputs"})
    return _MAKE_FX_KEYWORDS


def _named_state(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
    """Parameters, buffers and plain tensor attributes of every submodule (tied ones once)."""
    named: list[tuple[str, torch.Tensor]] = []
    seen_names = set()
    for name, t in list(model.named_parameters()) + list(model.named_buffers()):
        named.append((name, t))
        seen_names.add(name)
    # Plain tensor attributes (``self.mask = torch.tril(...)``, not registered as buffers) are
    # meta tensors when the file was loaded on meta; swap them for fakes as well.
    for mod_name, mod in model.named_modules():
        for attr, value in vars(mod).items():
            if isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter):
                full = f"{mod_name}.{attr}" if mod_name else attr
                if full not in seen_names:
                    named.append((full, value))
                    seen_names.add(full)
    return named


def _unique_bytes(tensors: Iterable[torch.Tensor]) -> int:
    seen, total = set(), 0
    for t in tensors:
        if id(t) in seen:
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total


def _set_eval(model: nn.Module) -> Callable[[], None]:
    flags = [(m, m.training) for m in model.modules()]
    model.eval()

    def restore():
        for m, training in flags:
            m.training = training

    return restore


def _module_names(model: nn.Module) -> dict[int, str]:
    names: dict[int, str] = {}
    for name, mod in model.named_modules(remove_duplicate=False):
        names.setdefault(id(mod), name)
    return names


class _ModuleTracker:
    """Counts nn.Module calls and keeps our own module stack (a fallback for nn_module_stack)."""

    def __init__(self, names: dict[int, str]):
        self.names = names
        self.calls = 0
        self.stack: list[tuple[str, str]] = []

    def _pre(self, module, args):
        self.calls += 1
        path = self.names.get(id(module))
        if path is None:  # a proxy or a module created during forward
            path = self.stack[-1][0] if self.stack else ""
        self.stack.append((path, type(module).__name__))

    def _post(self, module, args, output):
        if self.stack:
            self.stack.pop()

    @contextlib.contextmanager
    def installed(self):
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )

        pre = register_module_forward_pre_hook(self._pre)
        post = register_module_forward_hook(self._post)
        try:
            yield self
        finally:
            pre.remove()
            post.remove()


class _TorchCalls(TorchFunctionMode):
    """Numbers the torch calls the model's Python code makes (``F.linear``, ``x.view``, ``x + y``).

    The host pays Python's argument parsing and the dispatcher's entry once per such call, then the
    aten ops a native (C++) call runs inside it follow in C++: ``F.linear`` runs ``t`` and
    ``addmm``, ``torch.matmul`` on 3-d inputs ``view``, ``mm`` and ``_unsafe_view``. Every aten op
    made inside one native call gets its number, so that prediction can tell an op the call runs
    in C++ from a call of its own (``roofline.predict.dispatch_payers``).
    A call into a Python function (``F.relu``, ``F.multi_head_attention_forward``) is not numbered:
    its torch calls run in Python, each with its own Python cost, and this mode cannot see them
    (a mode is off while its handler runs), so their ops stay priced one by one.
    """

    def __init__(self):
        super().__init__()
        self.count = 0
        self.current: int | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        outer = self.current
        if outer is None:
            self.count += 1
            self.current = None if inspect.isfunction(func) else self.count
        try:
            return func(*args, **(kwargs or {}))
        finally:
            self.current = outer


@contextlib.contextmanager
def _quiet_torch_logs():
    """Failures become one-line CaptureErrors; torch's own error logs would only repeat them."""
    loggers = [logging.getLogger(name) for name in _NOISY_LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


_NOISY_LOGGERS = ("torch._subclasses.fake_tensor", "torch.fx.experimental.proxy_tensor")


@contextlib.contextmanager
def _record_sources(locator: "_FrameLocator", tracker: _ModuleTracker, calls: _TorchCalls):
    """While tracing, tag each new fx node with the user's line, our module stack top and the
    native torch call it ran inside (``calls``).

    ``fx.Graph.create_node`` is the one place every torch version creates nodes through, so it
    is wrapped for the duration of the trace and restored afterwards.
    """
    graph_cls = torch.fx.Graph
    own = "create_node" in graph_cls.__dict__
    original = graph_cls.create_node

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        op = args[0] if args else kwargs.get("op")
        if op == "call_function":
            try:
                node.meta[_SOURCE_KEY] = locator.find(sys._getframe(1))
                if tracker.stack:
                    node.meta[_MODULE_KEY] = tracker.stack[-1]
                if calls.current is not None:
                    node.meta[_CALL_KEY] = calls.current
            except Exception:  # noqa: BLE001 - provenance is best effort, never fatal
                pass
        return node

    graph_cls.create_node = create_node
    try:
        yield
    finally:
        if own:
            graph_cls.create_node = original
        else:
            del graph_cls.create_node


# --------------------------------------------------------------------------------------------
# fx graph -> CapturedGraph


def _to_captured(gm: torch.fx.GraphModule, traced_inputs: tuple) -> CapturedGraph:
    nodes = list(gm.graph.nodes)
    index: dict[torch.fx.Node, int] = {}
    op_nodes: list[torch.fx.Node] = []
    for node in nodes:
        if node.op == "call_function" and node.target is not operator.getitem:
            index[node] = len(op_nodes)
            op_nodes.append(node)

    def producer(node: torch.fx.Node) -> int | None:
        """The op whose output ``node`` is (through getitem on tuple outputs)."""
        while node.op == "call_function" and node.target is operator.getitem:
            src = node.args[0]
            if not isinstance(src, torch.fx.Node):
                return None
            node = src
        return index.get(node)

    def to_meta(x):
        if isinstance(x, torch.fx.Node):
            return _value_meta(x, gm)
        if isinstance(x, tuple):
            return tuple(to_meta(y) for y in x)
        if isinstance(x, list):  # includes fx's immutable_list
            return [to_meta(y) for y in x]
        if isinstance(x, dict):
            return {k: to_meta(v) for k, v in x.items()}
        return _concrete(x)

    def sources(x) -> list[tuple[str, int]]:
        """(value, producing op) for each tensor ``to_meta`` makes of ``x``, in the same order."""
        if isinstance(x, torch.fx.Node):
            made = to_meta(x)
            j = producer(x)
            key = (x.name, -1 if j is None else j)
            if isinstance(made, TensorMeta):
                return [key]
            if isinstance(made, (list, tuple)):
                return [(f"{x.name}[{i}]", key[1]) for i, m in enumerate(made) if isinstance(m, TensorMeta)]
            return []
        if isinstance(x, (list, tuple)):
            return [s for y in x for s in sources(y)]
        if isinstance(x, dict):
            return [s for y in x.values() for s in sources(y)]
        return []

    ops: list[CapturedOp] = []
    users: list[set[int]] = [set() for _ in op_nodes]
    for i, node in enumerate(op_nodes):
        inputs = sorted(
            {j for j in (producer(n) for n in node.all_input_nodes) if j is not None}
        )
        for j in inputs:
            users[j].add(i)
        module, module_type = _module_of(node)
        ops.append(
            CapturedOp(
                index=i,
                target=node.target,
                args=tuple(to_meta(a) for a in node.args),
                kwargs={k: to_meta(v) for k, v in node.kwargs.items()},
                outputs=tuple(_tensor_metas(node.meta.get("val"))),
                module=module,
                module_type=module_type,
                source=node.meta.get(_SOURCE_KEY),
                torch_call=node.meta.get(_CALL_KEY),
                input_ops=tuple(inputs),
                node_name=node.name,
                input_sources=tuple(sources(list(node.args)) + sources(list(node.kwargs.values()))),
            )
        )
    for op, u in zip(ops, users):
        op.users = tuple(sorted(u))

    outputs: list[TensorMeta] = []
    for node in nodes:
        if node.op != "output":
            continue
        for n in node.all_input_nodes:
            j = producer(n)
            if j is not None:
                ops[j].is_output = True
        flat, _ = pytree.tree_flatten(node.args[0] if node.args else ())
        for leaf in flat:
            if isinstance(leaf, torch.fx.Node):
                outputs.extend(_tensor_metas(leaf.meta.get("val")))

    flat_inputs, _ = pytree.tree_flatten(traced_inputs)
    return CapturedGraph(
        ops=ops,
        inputs=[TensorMeta.of(t) for t in flat_inputs if isinstance(t, torch.Tensor)],
        outputs=outputs,
        graph_module=gm,
    )


def _value_meta(node: torch.fx.Node, gm: torch.fx.GraphModule):
    """A node's value as an argument: tensors become TensorMeta, SymInts become ints."""
    if "val" in node.meta:
        val = node.meta["val"]
    elif node.op == "get_attr":
        try:
            val = operator.attrgetter(node.target)(gm)
        except AttributeError:
            val = None
    else:
        val = node.meta.get("example_value")

    def convert(v):
        if isinstance(v, torch.Tensor):
            return _tensor_meta(v)
        if isinstance(v, tuple):
            return tuple(convert(y) for y in v)
        if isinstance(v, list):
            return [convert(y) for y in v]
        return _concrete(v)

    return convert(val)


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


def _tensor_metas(val) -> list[TensorMeta]:
    flat, _ = pytree.tree_flatten(val)
    return [_tensor_meta(t) for t in flat if isinstance(t, torch.Tensor)]


def _normalize_path(path: str) -> str:
    """``L['self'].layers[3].attn`` / ``getattr(L['self'].layers, '3')`` -> ``layers.3.attn``."""
    p = str(path)
    while True:  # getattr(a, 'b') -> a.b, innermost first
        q = re.sub(r"getattr\(([^(),]*), '([^']*)'\)", r"\1.\2", p)
        if q == p:
            break
        p = q
    p = re.sub(r"\._modules\['([^']*)'\]", r".\1", p)
    p = re.sub(r"\[['\"]?([^'\"\]]+)['\"]?\]", r".\1", p)  # x[0] / x['a'] -> x.0 / x.a
    p = re.sub(r"^(?:L\.self|L__self__|self)(?=\.|$)", "", p)
    return p.strip(".")


def _module_of(node: torch.fx.Node) -> tuple[str, str]:
    stack = node.meta.get("nn_module_stack")
    if stack:
        path, cls = list(stack.values())[-1]
        if isinstance(cls, type):
            type_name = cls.__name__
        else:
            type_name = str(cls).rsplit(".", 1)[-1]
        return _normalize_path(path), type_name
    own = node.meta.get(_MODULE_KEY)
    if own:
        return own
    return "", ""


# --------------------------------------------------------------------------------------------
# where things happened: the user's line


class _FrameLocator:
    """Finds the innermost frame of user code, preferring named files (e.g. the model file)."""

    def __init__(self, preferred: set[str]):
        self.preferred = preferred
        torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
        ours = os.path.dirname(os.path.abspath(__file__)) + os.sep
        self.excluded = (torch_dir, ours)
        paths = sysconfig.get_paths()
        self.stdlib = tuple(
            {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths}
        )
        self._tier: dict[str, int] = {}

    def tier(self, filename: str) -> int:
        """0: preferred file, 1: user code, 2: third-party library, 3: not user code."""
        t = self._tier.get(filename)
        if t is None:
            t = self._classify(filename)
            self._tier[filename] = t
        return t

    def _classify(self, filename: str) -> int:
        if not filename:
            return 3
        if filename.startswith("<"):
            return 1 if filename.startswith(_INTERACTIVE) else 3
        full = os.path.abspath(filename)
        if full.startswith(self.excluded):  # torch itself (e.g. nn.Sequential) and roofline
            return 3
        if full in self.preferred:
            return 0
        library = any(part in full for part in ("site-packages", "dist-packages"))
        if library:
            return 2
        if full.startswith(self.stdlib):
            return 3
        return 1

    def best(self, frames: Iterable[tuple[str, int]]) -> tuple[str, int] | None:
        """``frames`` innermost first; the best (filename, line)."""
        best: dict[int, tuple[str, int]] = {}
        for filename, line in frames:
            t = self.tier(filename)
            if t < 3 and t not in best:
                best[t] = (filename, line)
                if t == 0:
                    break
        for t in (0, 1, 2):
            if t in best:
                return best[t]
        return None

    def find(self, frame) -> str | None:
        """``file.py:LINE`` of the best frame from ``frame`` out to the model call."""
        frames = []
        f = frame
        while f is not None and f.f_code is not _CALL_MODEL_CODE:
            frames.append((f.f_code.co_filename, f.f_lineno))
            f = f.f_back
        if f is None:  # not inside the model call: nothing of the user's to point at
            return None
        hit = self.best(frames)
        return f"{os.path.basename(hit[0])}:{hit[1]}" if hit else None


def _preferred_files(model, user_files) -> set[str]:
    files = set()
    for f in user_files or ():
        files.add(os.path.abspath(os.fspath(f)))
    try:
        obj = type(model) if isinstance(model, nn.Module) else model
        src = inspect.getsourcefile(obj)
        if src:
            files.add(os.path.abspath(src))
    except (TypeError, OSError):
        pass
    return files


def _exception_frames(exc: BaseException) -> list[tuple[str, int]]:
    """Frames of the model's code in ``exc``'s traceback (and its causes'), innermost first.

    Only frames inside the model call count: the caller of ``capture`` is not the model.
    """
    frames: list[tuple[str, int]] = []
    for e in _chain(exc):
        inside, found = [], False
        for frame, line in traceback.walk_tb(e.__traceback__):  # outermost first
            if frame.f_code is _CALL_MODEL_CODE:
                found, inside = True, []
                continue
            inside.append((frame.f_code.co_filename, line))
        if found:
            frames = list(reversed(inside)) + frames
    return frames


def _describe_location(exc: BaseException, locator: _FrameLocator) -> str:
    hit = locator.best(_exception_frames(exc))
    if hit is None:
        return "an unknown line of the model (no frame of user code in the traceback)"
    filename, line = hit
    text = linecache.getline(filename, line).strip()
    code = f" (`{_clip(text, 80)}`)" if text else ""
    return f"{os.path.basename(filename)}:{line}{code}"


# --------------------------------------------------------------------------------------------
# classifying failures


def _chain(exc: BaseException):
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _data_dependent_op(exc: BaseException) -> str | None:
    """The aten op that needed tensor values, if this failure is data dependence."""
    for e in _chain(exc):
        names = {cls.__name__ for cls in type(e).__mro__}
        if names & _DATA_DEPENDENT:
            func = getattr(e, "func", None)
            if func is not None:
                return op_name(func)
            if "GuardOnDataDependentSymNode" in names:
                return "a data-dependent shape or value"
            return "an op"
    return None


def _gloss(name: str) -> str:
    if "_local_scalar_dense" in name:
        return (
            "reads a tensor value into Python (`.item()`, `.tolist()`, `bool(t)`, "
            "`if t...:`: data-dependent control flow)"
        )
    if name.startswith("aten."):
        return "has an output size that depends on tensor values"
    return "needs tensor values (data-dependent control flow)"


def _involves_meta(exc: BaseException) -> bool:
    return any(re.search(r"\bmeta\b", str(e)) for e in _chain(exc))


def _summary(exc: BaseException) -> str:
    message = str(exc).strip()
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "").rstrip(".")
    return f"{type(exc).__name__}: {_clip(first, 300)}" if first else type(exc).__name__


def _hint(exc: BaseException) -> str:
    text = " ".join(str(e) for e in _chain(exc))
    names = {cls.__name__ for e in _chain(exc) for cls in type(e).__mro__}
    lowered = text.lower()
    if "UnsupportedOperatorException" in names or ("fake" in lowered and "support" in lowered):
        return (
            "an op without a fake-tensor kernel; capture with real CPU tensors "
            "(capture(..., materialize=...))"
        )
    if re.search(r"\bmeta\b", text):
        return (
            "a meta-device tensor reached the model outside its parameters and buffers; "
            "register it as a buffer, or capture with real CPU tensors "
            "(capture(..., materialize=...))"
        )
    return (
        "check that example_inputs have the shapes and dtypes the model expects "
        "(the model must run eagerly on them)"
    )


def _normalize_inputs(example_inputs: Any) -> tuple:
    if isinstance(example_inputs, tuple):
        return example_inputs
    if isinstance(example_inputs, list):
        return tuple(example_inputs)
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    raise CaptureError(
        f"example_inputs must be a tuple of the model's positional inputs, got "
        f"{type(example_inputs).__name__}; pass (x,) for a single input"
    )


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
