"""Load a user's model file: the model-file convention.

A model file is a Python file that defines either

* ``model`` (an ``nn.Module`` or any callable) and ``example_inputs``: a tuple of its positional
  inputs (a single tensor or a list is accepted and made a tuple), or a dict of its keyword inputs
  (``{"input_ids": ids, "attention_mask": mask}``), or
* functions ``get_model()`` and ``get_example_inputs()`` that return them.

By default the file runs under ``with torch.device("meta"):`` so that building even a
billion-parameter model allocates no parameter memory; capture (``roofline.graph.capture``) only needs
shapes and dtypes, and the values of small constant inputs, which ``roofline.graph.values.Recipes``
remembers how to make. A file that needs real values while it is being built (it computes on tensor
values at import) is run again with real CPU tensors, and the ``LoadedModel`` says so in
``warnings``. Every problem the user can fix raises ``ModelFileError`` with one line.
"""

from __future__ import annotations

import itertools
import linecache
import re
import sys
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from roofline.errors import ModelFileError
from roofline.graph.values import Recipes

__all__ = ["LoadedModel", "check_model_path", "load_model_file"]

_ATTRS = ("model", "example_inputs")
_FUNCS = ("get_model", "get_example_inputs")
_counter = itertools.count()


@dataclass
class LoadedModel:
    """A model and its example inputs, loaded from a model file."""

    model: Any  # nn.Module or plain callable
    args: tuple  # positional inputs
    kwargs: dict  # keyword inputs
    name: str  # the file's stem, e.g. "gpt2_xl"
    path: Path
    materialized: bool  # False: built under torch.device("meta") (no parameter memory)
    module: types.ModuleType  # the executed namespace (for optional extras such as ``sweep()``)
    warnings: list[str] = field(default_factory=list)
    convention: str = "attributes"  # "attributes" (model + example_inputs) or "functions"

    def materializer(self) -> Callable[[], tuple[Any, tuple, dict]]:
        """A zero-argument callable returning a real ``(model, args, kwargs)`` on the CPU.

        Pass it to ``roofline.graph.capture.capture(..., materialize=...)``: it is called only if
        capture needs tensor values. An already materialized load returns itself.
        """
        if self.materialized:
            return lambda: (self.model, self.args, self.kwargs)

        def load_real() -> tuple[Any, tuple, dict]:
            real = load_model_file(self.path, materialize=True)
            return real.model, real.args, real.kwargs

        return load_real


def load_model_file(path: str | Path, *, materialize: bool = False) -> LoadedModel:
    """Run a model file and return its model and example inputs.

    With ``materialize=False`` the file runs under ``torch.device("meta")``; if that fails, it
    is run again with real CPU tensors and a warning is recorded. ``materialize=True`` builds
    real tensors from the start.
    """
    path = check_model_path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ModelFileError(
            f"{path.name} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            f"save it as UTF-8 Python source"
        ) from None
    except OSError as exc:
        raise ModelFileError(f"cannot read model file {path}: {exc.strerror or exc}") from None
    code = _compile(source, path)

    if materialize:
        return _load(code, path, meta=False)
    try:
        return _load(code, path, meta=True)
    except _RunError as meta_failure:
        # The file may compute on tensor values while it is built (meta tensors have none):
        # run it for real. If it fails that way too, the real error is the one to report.
        loaded = _load(code, path, meta=False)
        loaded.warnings.append(
            f"{path.name} could not be built on the meta device "
            f"({meta_failure.location}: {meta_failure.summary}); it was built with real CPU "
            f"tensors instead, which allocates its parameters"
        )
        return loaded


class _RunError(ModelFileError):
    """The file (or its get_* functions) raised while running; carries where and what."""

    def __init__(self, message: str, location: str, summary: str):
        super().__init__(message)
        self.location = location
        self.summary = summary


def check_model_path(path: str | Path) -> Path:
    """The model file's resolved path, or a one-line ``ModelFileError`` when it is missing, a folder
    or not a .py file: the commands check it first, before any slower check."""
    if not str(path).strip():
        raise ModelFileError(
            "the model file's path is empty; pass the path of a .py file that defines "
            "`model` + `example_inputs` or `get_model()` + `get_example_inputs()`"
        )
    p = Path(path).expanduser()
    if not p.exists():
        raise ModelFileError(
            f"model file not found: {path}; pass the path of a .py file that defines "
            f"`model` + `example_inputs` or `get_model()` + `get_example_inputs()`"
        )
    if p.is_dir():
        raise ModelFileError(
            f"{path} is a directory, not a model file; pass the path of a .py file inside it"
        )
    if p.suffix != ".py":
        raise ModelFileError(
            f"{path} is not a Python file (expected a .py suffix); a model file is Python "
            f"source that defines `model` + `example_inputs` or `get_model()` + "
            f"`get_example_inputs()`"
        )
    return p.resolve()


def _compile(source: str, path: Path) -> types.CodeType:
    try:
        return compile(source, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = exc.lineno if exc.lineno is not None else "?"
        text = (exc.text or "").strip()
        where = f" in `{_clip(text, 60)}`" if text else ""
        raise ModelFileError(
            f"{path.name}:{line}: syntax error: {exc.msg}{where}; fix the file so that "
            f"`python {path.name}` runs"
        ) from None
    except ValueError as exc:  # e.g. source with null bytes
        raise ModelFileError(f"{path.name}: cannot compile: {exc}") from None


def _load(code: types.CodeType, path: Path, *, meta: bool) -> LoadedModel:
    module_name = f"_roofline_model_{_sanitize(path.stem)}_{next(_counter)}"
    module = types.ModuleType(module_name, f"roofline model file {path}")
    module.__file__ = str(path)
    module.__builtins__ = __builtins__  # type: ignore[attr-defined]
    # Registered so that classes defined in the file (dataclasses, pickling, typing) can find
    # their module; the unique name keeps two files with one stem (or one file loaded twice)
    # apart.
    sys.modules[module_name] = module
    directory = str(path.parent)
    added_to_path = directory not in sys.path
    if added_to_path:
        sys.path.insert(0, directory)  # sibling imports, as `python model.py` would allow
    device_ctx = torch.device("meta") if meta else _nullcontext()
    # on the meta device, remember how constant inputs (an all-ones attention mask) were made: the
    # capture gives a model's branches on their values the values (roofline.graph.values)
    recipes = Recipes() if meta else _nullcontext()
    try:
        with device_ctx, recipes:
            _run(lambda: exec(code, module.__dict__), path, what="running")
            model, (args, kwargs), convention = _extract(module, path)
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    finally:
        if added_to_path:
            try:
                sys.path.remove(directory)
            except ValueError:
                pass
    return LoadedModel(
        model=model,
        args=args,
        kwargs=kwargs,
        name=path.stem,
        path=path,
        materialized=not meta,
        module=module,
        convention=convention,
    )


def _extract(module: types.ModuleType, path: Path) -> tuple[Any, tuple[tuple, dict], str]:
    ns = module.__dict__
    has = {name: name in ns for name in _ATTRS + _FUNCS}
    fname = path.name
    if has["model"] and has["example_inputs"]:
        model, inputs, convention = ns["model"], ns["example_inputs"], "attributes"
        inputs_name = "`example_inputs`"
    elif has["get_model"] and has["get_example_inputs"]:
        for fn in _FUNCS:
            if not callable(ns[fn]):
                raise ModelFileError(
                    f"{fname}: `{fn}` must be a function, got {type(ns[fn]).__name__}; "
                    f"define `def {fn}(): ...`"
                )
        model = _run(ns["get_model"], path, what="calling get_model() from")
        inputs = _run(ns["get_example_inputs"], path, what="calling get_example_inputs() from")
        convention = "functions"
        inputs_name = "`get_example_inputs()` result"
    else:
        raise ModelFileError(_missing_names_message(fname, ns, has))

    if model is None or not callable(model):
        source = "`model`" if convention == "attributes" else "`get_model()`"
        raise ModelFileError(
            f"{fname}: {source} must be an nn.Module or a callable, got "
            f"{type(model).__name__}; "
            + (
                "set `model = MyModule(...)`"
                if convention == "attributes"
                else "return the module from get_model()"
            )
        )
    return model, _normalize_inputs(inputs, fname, inputs_name), convention


def _missing_names_message(fname: str, ns: dict, has: dict[str, bool]) -> str:
    partial = None
    if has["model"] and not has["example_inputs"]:
        partial = "defines `model` but not `example_inputs`; add `example_inputs = (...)`, a tuple of the model's positional inputs (or a dict of its keyword inputs)"
    elif has["example_inputs"] and not has["model"]:
        partial = "defines `example_inputs` but not `model`; add `model = ...` (an nn.Module or a function)"
    elif has["get_model"] and not has["get_example_inputs"]:
        partial = "defines `get_model()` but not `get_example_inputs()`; add `def get_example_inputs(): return (...)`"
    elif has["get_example_inputs"] and not has["get_model"]:
        partial = "defines `get_example_inputs()` but not `get_model()`; add `def get_model(): return ...`"
    if partial:
        return f"{fname} {partial}"
    own = ns.get("__name__")
    defined = [
        name
        for name, value in ns.items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        # imported classes and functions are not the file's own definitions
        and not (
            isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType))
            and getattr(value, "__module__", own) != own
        )
    ]
    listing = f" (it defines: {', '.join(defined[:12])}{', ...' if len(defined) > 12 else ''})" if defined else ""
    return (
        f"{fname} defines neither `model` + `example_inputs` nor `get_model()` + "
        f"`get_example_inputs()`{listing}; define one pair"
    )


def _normalize_inputs(inputs: Any, fname: str, what: str) -> tuple[tuple, dict]:
    """(positional, keyword) inputs from what the file gave."""
    if isinstance(inputs, tuple):
        return inputs, {}
    if isinstance(inputs, list):
        return tuple(inputs), {}
    if isinstance(inputs, torch.Tensor):
        return (inputs,), {}
    if isinstance(inputs, dict):
        bad = [k for k in inputs if not isinstance(k, str) or not k.isidentifier()]
        if bad:
            raise ModelFileError(f"{fname}: {what} is a dict, but its key {bad[0]!r} is not an argument name; use the model's keyword argument names as keys")
        return (), dict(inputs)
    raise ModelFileError(
        f"{fname}: {what} must be a tuple of the model's positional inputs (a single tensor "
        f"or a list is accepted too) or a dict of its keyword inputs, got {type(inputs).__name__}"
    )


def _run(fn: Callable[[], Any], path: Path, *, what: str) -> Any:
    """Call ``fn``; turn any exception into a one-line ModelFileError at the user's line."""
    try:
        return fn()
    except (Exception, SystemExit) as exc:
        location, code_line = _user_location(exc, path)
        summary = _exception_summary(exc)
        code = f" (`{_clip(code_line, 80)}`)" if code_line else ""
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            package = exc.name.split(".")[0]
            extra = " (or roofline's extra: pip install 'roofline[hf]')" if package == "transformers" else ""
            way_out = f"install it: pip install {package}{extra}"
        else:
            way_out = f"fix the file so that it runs on its own (`python {path.name}`)"
        raise _RunError(
            f"{location}: error while {what} the model file{code}: {summary}; {way_out}",
            location=location,
            summary=summary,
        ) from None


def _user_location(exc: BaseException, path: Path) -> tuple[str, str]:
    """``file.py:LINE`` of the innermost frame in the model file, and that line's text."""
    target = str(path)
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == target:
            found = frame
    if found is None:
        return path.name, ""
    text = found.line or linecache.getline(found.filename, found.lineno or 0)
    return f"{path.name}:{found.lineno}", (text or "").strip()


def _exception_summary(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the file called sys.exit({exc.code!r})"
    message = str(exc).strip()
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "").rstrip(".")
    name = type(exc).__name__
    return f"{name}: {_clip(first, 300)}" if first else name


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sanitize(stem: str) -> str:
    return re.sub(r"\W", "_", stem) or "model"


class _nullcontext:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False
