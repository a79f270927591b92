"""Libraries that take another code path when they see a fake tensor, told which of the capture's fake
tensors have known values (``roofline.graph.values``).

transformers treats any ``FakeTensor`` as a trace (``transformers.utils.import_utils.is_tracing``)
and then never reads a mask's values: it keeps the attention mask it would skip in a real run of an
all-ones mask, so SDPA gets a materialized mask instead of ``is_causal`` (and ``enable_gqa``), and
often runs another backend. For a fake tensor whose values the capture knows, the honest answer is
that it is not a trace: the library then reads the value, which the capture answers.

Such a read is a host sync of eager runs only: the library skips it under torch.compile and while a
CUDA graph is captured (its guard says "tracing" there), so it does not rule those plans out.
"""

from __future__ import annotations

import sys

from roofline.graph.values import Shadow


class LibraryGuards:
    """Context manager: while active, libraries already imported treat fake tensors with known
    values as real. ``flipped`` says whether a library asked about one; ``in_library(frame)``
    whether a read at a frame is made by the library function that asked."""

    def __init__(self, shadow: Shadow):
        self.shadow = shadow
        self.flipped = False
        self.asked: set = set()  # code objects of the library functions told a tensor was not traced
        self._restore: list[tuple[object, str, object]] = []

    def __enter__(self) -> "LibraryGuards":
        module = sys.modules.get("transformers.utils.import_utils")
        original = getattr(module, "is_fake_tensor", None) if module is not None else None
        if callable(original):

            def is_fake_tensor(x, _original=original) -> bool:
                fake = _original(x)
                if fake and x in self.shadow:
                    self.flipped = True
                    # the library function that asked (through is_tracing): its reads are its checks
                    caller = sys._getframe(2) if sys._getframe(1).f_code.co_name == "is_tracing" else sys._getframe(1)
                    self.asked.add(caller.f_code)
                    return False
                return fake

            module.is_fake_tensor = is_fake_tensor
            self._restore.append((module, "is_fake_tensor", original))
        return self

    def __exit__(self, *exc) -> bool:
        for module, name, value in self._restore:
            setattr(module, name, value)
        self._restore.clear()
        return False

    def in_library(self, frame) -> bool:
        """Whether a read at ``frame`` is one of a library function these guards told that a tensor
        was not traced: that function is at ``frame`` or calls it."""
        f = frame
        while f is not None and self.asked:
            if f.f_code in self.asked:
                return True
            f = f.f_back
        return False
