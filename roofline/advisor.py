"""``with roofline.Advisor(profile=...) as adv: model(x)``, then ``adv.report``: the CLI's analysis
of whatever code ran inside the block (a forward, a decode loop, any torch code), as
``torch.utils.flop_counter.FlopCounterMode`` counts FLOPs.

Tensors may be real or fake: real ones run for real on the device they are on, meta ones
(``with torch.device("meta"):``) run nothing. The prediction is for the profile's device part
(``device=``), whatever device the block ran on.
"""

from __future__ import annotations

from pathlib import Path

from roofline.graph.session import Recording
from roofline.pipeline import Analysis, Options, read_host_level, resolve_profile
from roofline.schema.profile import DeviceProfile
from roofline.schema.report import Report


class Advisor:
    """A context manager that records the ops its block runs and analyzes them on a profile.

    ``profile``: a ``DeviceProfile``, a name ``roofline profiles`` shows, a path, or None for the
    newest saved one. Other keywords are ``roofline.pipeline.Options`` fields (``device``,
    ``allow_tf32``, ``calls``, ``batch_sweep``, ...). After the block, ``report`` is the ``Report``
    and ``analysis`` the ``Analysis`` behind it; nothing is analyzed if the block raised.
    """

    def __init__(self, profile: DeviceProfile | str | Path | None = None, *, name: str = "block", **options):
        options.setdefault("batch_sweep", False)  # the block's inputs are not known, so neither is its batch
        self.options = Options(**options)
        self.profile, self.kind = resolve_profile(profile, self.options.device)
        self.profile, self.host_read = read_host_level(self.profile, self.kind, self.options)
        self.name = name
        self._recording: Recording | None = None
        self.analysis: Analysis | None = None
        self._report: Report | None = None

    def __enter__(self) -> "Advisor":
        self._recording = Recording(self.options.user_files)
        self._recording.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._recording.__exit__(exc_type, exc, tb)
        if exc_type is None:
            graph = self._recording.graph
            self.analysis = Analysis(graph, self.profile, self.kind, self.options, name=self.name, is_module=bool(graph.module_calls), host_read=self.host_read)
        return False

    @property
    def report(self) -> Report:
        """The report of what the block ran (computed once, on first use)."""
        if self.analysis is None:
            raise RuntimeError("the Advisor's block has not finished (or raised): use adv.report after the `with` block")
        if self._report is None:
            self._report = self.analysis.report()
        return self._report
