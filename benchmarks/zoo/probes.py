"""Host probes: small programs that each repeat one calling pattern, to time what the host pays per
native torch call on a GPU, where the zoo's models mix every pattern together.

    python benchmarks/accuracy.py --zoo --probes --profile P --json OUT.json     (then --replay OUT.json)

Every probe runs its pattern ``REPEATS`` times on tensors small enough that the device waits for the
host, so the run's time is the host's. Some patterns are one aten op per Python call (``add``,
``bmm``, a 2-d ``F.linear``); the others are one Python call that runs several aten ops in C++
(``torch.matmul`` on 4-d tensors: expand, view, bmm, _unsafe_view; ``F.linear`` on a 3-d input; a
transposed input's ``F.linear``, which goes through matmul and a separate bias add; ``chunk``;
``einsum``; a non-contiguous ``reshape``). The record they make replays like the zoo's, so the host
model's terms (``roofline.model.host``) can be judged on patterns one at a time.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.zoo.registry import ZooCase, ZooModel

REPEATS = 16


class Pattern(nn.Module):
    """``REPEATS`` calls of ``fn`` on the inputs, chained where shapes allow so nothing is dead code."""

    def __init__(self, fn, params: dict[str, tuple[int, ...]] | None = None):
        super().__init__()
        self.fn = fn
        for name, shape in (params or {}).items():
            setattr(self, name, nn.Parameter(torch.randn(shape) * 0.02))

    def forward(self, *xs):
        out = []
        for _ in range(REPEATS):
            out.append(self.fn(self, *xs))
        return out


def _probe(name, fn, inputs, params=None) -> ZooModel:
    return ZooModel(name, "probe", "other", lambda: Pattern(fn, params), lambda b: (inputs(b), {}), batches=(1,), dtypes=(torch.float32,))


def _x(*shape):
    return lambda b: (torch.randn(b, *shape),)


PROBES = [
    _probe("probe_add", lambda m, x, y: x + y, lambda b: (torch.randn(b, 77, 768), torch.randn(b, 77, 768))),
    _probe("probe_gelu", lambda m, x: F.gelu(x), _x(77, 768)),
    _probe("probe_layer_norm", lambda m, x: F.layer_norm(x, (768,), m.w, m.b), _x(77, 768), {"w": (768,), "b": (768,)}),
    _probe("probe_view", lambda m, x: x.view(-1, 768), _x(77, 768)),
    _probe("probe_transpose", lambda m, x: x.transpose(1, 2), _x(77, 768)),
    _probe("probe_bmm", lambda m, a, c: torch.bmm(a, c), lambda b: (torch.randn(12 * b, 77, 64), torch.randn(12 * b, 64, 77))),
    _probe("probe_matmul_4d", lambda m, a, c: torch.matmul(a, c), lambda b: (torch.randn(b, 12, 77, 64), torch.randn(b, 12, 64, 77))),
    _probe("probe_linear_2d", lambda m, x: F.linear(x, m.w, m.b), _x(768), {"w": (768, 768), "b": (768,)}),
    _probe("probe_linear_3d", lambda m, x: F.linear(x, m.w, m.b), _x(77, 768), {"w": (768, 768), "b": (768,)}),
    _probe("probe_linear_transposed", lambda m, x: F.linear(x.transpose(1, 2), m.w, m.b), _x(64, 256), {"w": (128, 64), "b": (128,)}),
    _probe("probe_chunk", lambda m, x: x.chunk(3, dim=-1), _x(77, 2304)),
    _probe("probe_einsum", lambda m, a, c: torch.einsum("bhqd,bhkd->bhqk", a, c), lambda b: (torch.randn(b, 12, 77, 64), torch.randn(b, 12, 77, 64))),
    _probe("probe_reshape_copy", lambda m, x: x.transpose(1, 2).reshape(x.shape[0], -1), _x(77, 768)),
    _probe("probe_softmax", lambda m, x: torch.softmax(x, dim=-1), _x(12, 77, 77)),
]


def probe_cases() -> list[ZooCase]:
    """Every probe at its one batch and dtype, as zoo cases."""
    return [ZooCase(m, b, d) for m in PROBES for b in m.batches for d in m.dtypes]
