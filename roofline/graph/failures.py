"""Why a capture failed, in one line: where in the user's code, what, and the way out.

A failure is data dependence when the model needs tensor values that fake tensors do not have
(``.item()``, ``if t...:``, ``nonzero``); capture can then fall back to running the model on real
CPU tensors. Anything else names the user's line (or the library frame) and a hint.
"""

from __future__ import annotations

import linecache
import os
import re
import traceback

from roofline.graph.ops import op_name
from roofline.graph.provenance import CALL_MODEL_CODE, FrameLocator

# Exceptions (by class name, so that torch versions which move them still match) raised when
# code needs tensor values that fake tensors do not have.
_DATA_DEPENDENT = {
    "DataDependentOutputException",
    "DynamicOutputShapeException",
    "GuardOnDataDependentSymNode",
    "PendingUnbackedSymbolNotFound",
}


def _exception_frames(exc: BaseException) -> list[tuple[str, int]]:
    """Frames of the model's code in ``exc``'s traceback (and its causes'), innermost first.

    Only frames inside the model call count: the caller of ``capture`` is not the model.
    """
    frames: list[tuple[str, int]] = []
    for e in _chain(exc):
        inside, found = [], False
        for frame, line in traceback.walk_tb(e.__traceback__):  # outermost first
            if frame.f_code is CALL_MODEL_CODE:
                found, inside = True, []
                continue
            inside.append((frame.f_code.co_filename, line))
        if found:
            frames = list(reversed(inside)) + frames
    return frames


def describe_location(exc: BaseException, locator: FrameLocator) -> str:
    hit = locator.best(_exception_frames(exc))
    if hit is None:
        if _arguments_mismatch(exc):
            return "the call of the model (example_inputs do not match its arguments)"
        return "a line of torch's own code (no frame of user code in the traceback)"
    filename, line = hit
    text = linecache.getline(filename, line).strip()
    code = f" (`{_clip(text, 80)}`)" if text else ""
    return f"{os.path.basename(filename)}:{line}{code}"


# --------------------------------------------------------------------------------------------
# classifying failures

# what Python says when a call's arguments do not fit the function's signature
_SIGNATURE_MISMATCH = re.compile(
    r"takes \d+ positional arguments? but \d+ (were|was) given|missing \d+ required (positional|keyword-only) arguments?|"
    r"got an unexpected keyword argument|got multiple values for argument"
)


def _arguments_mismatch(exc: BaseException) -> bool:
    return isinstance(exc, TypeError) and bool(_SIGNATURE_MISMATCH.search(str(exc)))


def _chain(exc: BaseException):
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def data_dependent_op(exc: BaseException) -> str | None:
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


def gloss(name: str) -> str:
    if "_local_scalar_dense" in name:
        return (
            "reads a tensor value into Python (`.item()`, `.tolist()`, `bool(t)`, "
            "`if t...:`: data-dependent control flow)"
        )
    if name.startswith("aten."):
        return "has an output size that depends on tensor values"
    return "needs tensor values (data-dependent control flow)"


def involves_meta(exc: BaseException) -> bool:
    return any(re.search(r"\bmeta\b", str(e)) for e in _chain(exc))


def summary(exc: BaseException) -> str:
    message = str(exc).strip()
    first = next((ln.strip() for ln in message.splitlines() if ln.strip()), "").rstrip(".")
    return f"{type(exc).__name__}: {_clip(first, 300)}" if first else type(exc).__name__


def hint(exc: BaseException) -> str:
    text = " ".join(str(e) for e in _chain(exc))
    names = {cls.__name__ for e in _chain(exc) for cls in type(e).__mro__}
    lowered = text.lower()
    if "UnsupportedOperatorException" in names or ("fake" in lowered and "support" in lowered):
        return (
            "an op without a fake-tensor kernel; capture with real CPU tensors "
            "(capture(..., materialize=...))"
        )
    if _arguments_mismatch(exc):
        return (
            "make the call's arguments match the function's signature (for the model itself: example_inputs, "
            "a tuple of its positional inputs or a dict of its keyword inputs)"
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


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
