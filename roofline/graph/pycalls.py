"""How much Python a model's own code runs between its aten ops, counted while it is captured.

A model's eager forward is its ops' dispatch plus the Python of the code around them. Code written
with torch.nn alone is thin (module calls, which prediction prices on their own); library code is not:
transformers passes keyword arguments through layers of wrappers, builds output dataclasses and
attention-interface lookups around every block. The zoo of real models shows it (docs/design.md,
"The host's Python"): a model's host time follows the number of Python function calls of its own code
at a cost per call that one constant of the model relates to the calibrated dispatch.

``PythonCalls`` counts, between consecutive aten ops, the calls of Python functions whose code is
neither torch's, nor the standard library's, nor roofline's: the model's and its libraries'. torch's
own Python (nn.Module calls, ``torch.nn.functional``) is priced by the dispatch and module-call costs
already, and the capture's machinery (fake tensors, the recorder) is switched off while it runs. The
count is deterministic for given library versions: it does not depend on this machine's speed.
"""

from __future__ import annotations

import inspect
import os
import sys
import sysconfig
import threading

from roofline.graph.provenance import TORCH_DIR

# generators, coroutines and async generators: resumed many times, each resumption a profile "call"
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_INLINED = ("<listcomp>", "<dictcomp>", "<setcomp>")  # function calls on Python 3.11, inlined from 3.12
# the import system's function that imports one module (frozen into the interpreter)
_FIND_AND_LOAD = getattr(getattr(sys.modules.get("_frozen_importlib"), "_find_and_load", None), "__code__", None)


def _excluded_prefixes() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(prefixes of code not counted, prefixes inside them that are counted: installed packages)."""
    roofline_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    paths = sysconfig.get_paths()
    stdlib = {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if k in paths}
    packages = {os.path.abspath(paths[k]) + os.sep for k in ("purelib", "platlib") if k in paths}
    return (TORCH_DIR, roofline_dir, *sorted(stdlib)), tuple(sorted(packages))


class PythonCalls:
    """Counts Python calls of the model's own code while active (a context manager). ``take()``
    returns the count since the last take; ``off()``/``on()`` bracket the capture's own work."""

    def __init__(self) -> None:
        self.pending = 0
        self._counted: dict = {}  # code object -> whether its calls count
        self._excluded, self._packages = _excluded_prefixes()
        self._depth_off = 0
        self._importing = 0  # imports in progress (their module bodies' Python is not the model's)
        self._previous = None
        self._thread: int | None = None

    def _counts(self, code) -> bool:
        name = code.co_filename
        if name.startswith("<frozen "):  # the import system and other frozen modules: the standard library
            return False
        if code.co_flags & _RESUMABLE or code.co_name in _INLINED:
            # a generator's every resumption is a "call", and Python 3.12 inlines comprehensions that
            # 3.11 calls: neither is counted, so the count is the same on both
            return False
        if name.startswith(self._packages):  # site-packages may lie inside the standard library's folder
            return not name.startswith(self._excluded[:2])
        return not name.startswith(self._excluded)

    def _event(self, frame, event, arg) -> None:
        if event != "call":
            if event == "return" and frame.f_code is _FIND_AND_LOAD:
                self._importing -= 1
            return
        code = frame.f_code
        if code is _FIND_AND_LOAD:
            # a module imported for the first time (a lazy import in the model's code, a warm-up's first
            # use of a torch module): a real run made it before, once, and runs none of it per call
            self._importing += 1
            return
        if self._importing:
            return
        counts = self._counted.get(code)
        if counts is None:
            counts = self._counted[code] = self._counts(code)
        if counts:
            self.pending += 1

    def __enter__(self) -> "PythonCalls":
        self._thread = threading.get_ident()
        self._previous = sys.getprofile()
        sys.setprofile(self._event)
        return self

    def __exit__(self, *exc) -> bool:
        sys.setprofile(self._previous)
        self._thread = None
        return False

    def off(self) -> None:
        """Stop counting (the capture's own work starts); ``on()`` resumes. Nested pairs are fine. On
        another thread than the one that entered (autograd's device threads run the recorder too)
        both do nothing: a profile function is per thread, and only the entering one has it."""
        if threading.get_ident() != self._thread:
            return
        if self._depth_off == 0:
            sys.setprofile(None)
        self._depth_off += 1

    def on(self) -> None:
        if threading.get_ident() != self._thread:
            return
        self._depth_off -= 1
        if self._depth_off == 0:
            sys.setprofile(self._event)

    def take(self) -> int:
        n, self.pending = self.pending, 0
        return n
