"""Where each captured op comes from: the user's line, the nn.Module it ran in, and the native
torch call that ran it.

- ``FrameLocator`` finds the innermost frame of the user's code (preferring the model file) out to
  the model call (``call_model``), the boundary between the caller and the model;
- ``ModuleTracker`` counts nn.Module calls and keeps a stack of the modules being run, through
  global forward hooks installed only while capturing;
- ``TorchCalls`` numbers the torch calls the model's Python code makes.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import os
import sysconfig
from typing import Callable, Iterable

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

# Pseudo-filenames of interactive code, which is the user's.
_INTERACTIVE = ("<stdin>", "<string>", "<console>", "<ipython-input")


def call_model(model, is_module: bool, state: dict, args: tuple, kwargs: dict):
    """The boundary of the user's code: frames inside this call are the model's, outside not."""
    if is_module:
        return torch.func.functional_call(model, state, args, kwargs, strict=False)
    return model(*args, **kwargs)


CALL_MODEL_CODE = call_model.__code__


def named_state(model: nn.Module) -> list[tuple[str, torch.Tensor]]:
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


def unique_bytes(tensors: Iterable[torch.Tensor]) -> int:
    seen, total = set(), 0
    for t in tensors:
        if id(t) in seen:
            continue
        seen.add(id(t))
        total += t.numel() * t.element_size()
    return total


def set_eval(model: nn.Module) -> Callable[[], None]:
    flags = [(m, m.training) for m in model.modules()]
    model.eval()

    def restore():
        for m, training in flags:
            m.training = training

    return restore


def module_names(model: nn.Module) -> dict[int, str]:
    names: dict[int, str] = {}
    for name, mod in model.named_modules(remove_duplicate=False):
        names.setdefault(id(mod), name)
    return names


# Modules that take a fused inference fast path (one native op for the whole layer) unless a
# torch function mode is active, as one is while capturing; inside them the capture's modes stand
# aside so that the layer runs as it runs eagerly.
FAST_PATH_MODULES = (nn.TransformerEncoder, nn.TransformerEncoderLayer, nn.MultiheadAttention)


class ModuleTracker:
    """Counts nn.Module calls and keeps the stack of modules being run: (dotted path, class name)."""

    def __init__(self, names: dict[int, str]):
        self.names = names
        self.calls = 0
        self.stack: list[tuple[str, str]] = []
        self._standing_aside: list[tuple[int, object]] = []  # (stack depth, torch function disabled)

    def _pre(self, module, args):
        self.calls += 1
        path = self.names.get(id(module))
        if path is None:  # a proxy or a module created during forward
            path = self.stack[-1][0] if self.stack else ""
        self.stack.append((path, type(module).__name__))
        if isinstance(module, FAST_PATH_MODULES) and not module.training and not self._standing_aside:
            off = torch._C.DisableTorchFunction()
            off.__enter__()
            self._standing_aside.append((len(self.stack), off))

    def _post(self, module, args, output):
        if self._standing_aside and self._standing_aside[-1][0] == len(self.stack):
            self._standing_aside.pop()[1].__exit__(None, None, None)
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
            while self._standing_aside:  # a forward that raised left its module's modes off
                self._standing_aside.pop()[1].__exit__(None, None, None)


def _rnn_overload(name: str):
    """The aten overload of a ``_VF`` recurrent call: ``.data`` (packed: batch sizes second) or ``.input``."""
    def pick(args: tuple):
        packet = getattr(torch.ops.aten, name)
        return packet.data if len(args) > 3 and isinstance(args[3], (list, tuple)) else packet.input
    return pick


# Recurrent stacks that CPU ATen runs as a Python-invisible decomposition (a GRU becomes a
# gru_cell per step): recorded as the one aten op the model called, which is what a GPU runs
# (one cuDNN call per stack) and what the cost registry prices whole.
WHOLE_CALLS = {getattr(torch._VF, n): _rnn_overload(n) for n in ("gru", "rnn_tanh", "rnn_relu") if hasattr(torch._VF, n)}


# Tensor methods that read a tensor's values into Python: on a GPU each waits for the device to
# finish (a host sync), which a CUDA graph cannot capture and which splits a torch.compile graph.
HOST_READS = {
    torch.Tensor.item: ".item()", torch.Tensor.tolist: ".tolist()", torch.Tensor.numpy: ".numpy()",
    torch.Tensor.__bool__: "bool(tensor) / `if tensor:`", torch.Tensor.__int__: "int(tensor)",
    torch.Tensor.__float__: "float(tensor)", torch.Tensor.__index__: "a tensor used as an index",
}


# torch's own code: where its Python functions and modules live
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep

# torch's Python functions that are not one native call: multi_head_attention_forward makes a native
# call per step, each paying its Python entry; backward (and autograd.grad) runs the autograd engine,
# whose per-node host costs are calibrated on their own (roofline.measure.training_host)
UNNUMBERED = frozenset({"multi_head_attention_forward", "backward", "grad"})


def numbered_call(func) -> bool:
    """Whether the aten ops one torch call runs share a number (``TorchCalls``): a native (C++) call's
    do, and so do a Python function of torch's own's, but for ``UNNUMBERED``; a Python function of
    other code (a model's ``forward`` reached through a tensor subclass) is not one call."""
    if not inspect.isfunction(func):
        return True
    code = getattr(func, "__code__", None)
    return code is not None and os.path.abspath(code.co_filename).startswith(TORCH_DIR) and func.__name__ not in UNNUMBERED


class TorchCalls(TorchFunctionMode):
    """Numbers the torch calls the model's Python code makes (``F.linear``, ``x.view``, ``x + y``).

    The host pays Python's argument parsing and the dispatcher's entry once per such call, then the
    aten ops a native (C++) call runs inside it follow in C++: ``F.linear`` runs ``t`` and
    ``addmm``, ``torch.matmul`` on 3-d inputs ``view``, ``mm`` and ``_unsafe_view``. Every aten op
    made inside one native call gets its number, so that prediction can tell an op the call runs
    in C++ from a call of its own (``roofline.model.timeline.dispatch_payers``).
    A Python function of torch's own (``torch.einsum``, ``F.normalize``, ``Tensor.split``) is numbered
    as one call: this mode cannot see the native calls it makes (a mode is off while its handler
    runs), and most make one (``torch.einsum``'s runs a dozen aten ops in C++), so its ops pay one
    Python entry between them. ``F.multi_head_attention_forward`` is not (``UNNUMBERED``): a page of
    Python making a native call per step, whose ops stay priced one by one, as are the ops of a
    model's own Python functions, whose torch calls reach this mode one by one.
    """

    def __init__(self):
        super().__init__()
        self.count = 0
        self.current: int | None = None
        # called instead of a whole recurrent stack (``_VF.gru``) when set: see WHOLE_CALLS
        self.on_whole: Callable | None = None
        # called with HOST_READS' description when the model reads tensor values into Python
        self.on_host_read: Callable[[str], None] | None = None
        # called with the result of each outermost call (a training step's capture maps the autograd
        # nodes the call made to its module and line)
        self.on_return: Callable[[object], None] | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if self.on_whole is not None and func in WHOLE_CALLS and self.current is None:
            return self.on_whole(WHOLE_CALLS[func](args), func, args, kwargs or {})
        if self.on_host_read is not None and func in HOST_READS:
            self.on_host_read(HOST_READS[func])
        outer = self.current
        if outer is None:
            self.count += 1
            self.current = self.count if numbered_call(func) else None
        try:
            result = func(*args, **(kwargs or {}))
        finally:
            self.current = outer
        if outer is None and self.on_return is not None:
            self.on_return(result)
        return result


@contextlib.contextmanager
def quiet_torch_logs():
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


class FrameLocator:
    """Finds the innermost frame of user code, preferring named files (e.g. the model file)."""

    def __init__(self, preferred: set[str]):
        self.preferred = preferred
        ours = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # the roofline package
        self.excluded = (TORCH_DIR, ours)
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
        while f is not None and f.f_code is not CALL_MODEL_CODE:
            frames.append((f.f_code.co_filename, f.f_lineno))
            f = f.f_back
        if f is None:  # not inside the model call: nothing of the user's to point at
            return None
        hit = self.best(frames)
        return f"{os.path.basename(hit[0])}:{hit[1]}" if hit else None


def preferred_files(model, user_files) -> set[str]:
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
