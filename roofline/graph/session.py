"""Capture whatever code runs inside a ``with`` block, as ``capture`` captures one model call.

The recording modes of ``roofline.graph.capture`` are installed on entry and removed on exit; the
code inside runs as the user wrote it, on the tensors the user made: real ones run for real, on the
device they are on, and meta or fake ones run nothing. Modules are discovered as they are called:
a module called from outside any other names its submodules as ``capture`` would (the outermost
one is the model, its children ``layers.0.attn`` and so on), its parameters and buffers are the
resident weights, its return values the outputs, and every other tensor from outside the block
that an op reads is an input.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

from roofline.errors import CaptureError
from roofline.graph.capture import _is_fake, _Recorder, _tensor_meta
from roofline.graph.ops import CapturedGraph
from roofline.graph.pycalls import PythonCalls
from roofline.graph.provenance import FrameLocator, ModuleTracker, TorchCalls, module_names, named_state, quiet_torch_logs, unique_bytes


class _DiscoveringTracker(ModuleTracker):
    """A module tracker that learns the names of a module tree when its root is first called."""

    def __init__(self, on_root_return):
        super().__init__({})
        self.roots: list[nn.Module] = []
        self._on_root_return = on_root_return

    def _pre(self, module, args):
        if not self.stack and id(module) not in self.names:
            self.roots.append(module)
            self.names.update(module_names(module))
        super()._pre(module, args)

    def _post(self, module, args, output):
        super()._post(module, args, output)
        if not self.stack:
            self._on_root_return(output)


class _BlockRecorder(_Recorder):
    """The capture's recorder, also keeping each tensor from outside the block that an op read
    (inputs, or the weights of a module it discovered)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.outside: list[torch.Tensor] = []

    def _source_of(self, t: torch.Tensor) -> tuple[str, int]:
        new = self.values.get(t) is None
        found = super()._source_of(t)
        if new:
            self.outside.append(t)
        return found


class Recording:
    """``with Recording() as rec: ...`` then ``rec.graph``: the ops the block ran."""

    def __init__(self, user_files=()):
        self.locator = FrameLocator({str(f) for f in user_files})
        self.graph: CapturedGraph | None = None
        self._returned: list = []

    def __enter__(self) -> "Recording":
        self.tracker = _DiscoveringTracker(self._returned.append)
        self.calls = TorchCalls()
        self.pycalls = PythonCalls()
        self.recorder = _BlockRecorder(self.locator, self.tracker, self.calls, self.pycalls)
        self.calls.on_whole = self.recorder.record_whole
        self.calls.on_host_read = self.recorder.host_read
        self._contexts = [self.tracker.installed(), quiet_torch_logs(), self.calls, self.recorder, self.pycalls]
        for c in self._contexts:
            c.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        for c in reversed(self._contexts):
            c.__exit__(*sys.exc_info()) if exc_type else c.__exit__(None, None, None)
        if exc_type is None:
            self.graph = self._graph()
        return False

    def _graph(self) -> CapturedGraph:
        rec = self.recorder
        if not rec.ops:
            raise CaptureError("nothing ran inside the `with` block that reached torch's dispatcher; call the model inside it")
        for output in self._returned:
            rec.mark_returned(output)
        graph = rec.graph(self._returned[-1] if self._returned else None)
        graph.ops[-1].python_calls += self.pycalls.take()  # the block's Python after its last op
        if not self._returned:  # plain functions: what no later op reads is what the block made
            for op in graph.ops:
                op.is_output = op.is_output or not op.users
            graph.outputs = [t for op in graph.ops if not op.users for t in op.outputs]
        state = [t for root in self.tracker.roots for _, t in named_state(root)]
        state_ids = {id(t) for t in state}
        inputs = [t for t in rec.outside if id(t) not in state_ids]
        graph.inputs = [_tensor_meta(t) for t in inputs]
        rec.outside.clear()  # hold no user tensor after the block
        graph.parameters_bytes = unique_bytes(state)
        graph.module_calls = self.tracker.calls
        graph.state_tensors = len(state_ids)
        graph.host_reads = list(dict.fromkeys(rec.host_reads))
        kinds = {"meta" if t.is_meta else "fake" if _is_fake(t) else "real" for t in inputs + state}
        graph.capture_mode = "real" if kinds == {"real"} else "fake"
        if "meta" in kinds:
            graph.warnings.append(
                "the block ran on meta tensors, for which torch picks no fused kernels (attention runs as its math "
                "decomposition) and prices them so; make the tensors under torch._subclasses.FakeTensorMode instead "
                "(or analyze a model file with `roofline advise`) to price the kernels a real run picks"
            )
        return graph
