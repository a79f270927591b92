"""How far back each op's inputs were last touched: the reuse distance that says which level of a
CPU's caches an op must fetch them from.

The calibrated pointwise curves repeat one op on the same buffers, so an op whose buffers fit in L2
is priced at L2-hot rates. In a real program an input may have been last touched long before (a
gradient made in the backward, optimizer state a whole step ago, a residual branch several layers
back): it then comes from L3 or DRAM and moves at the rate the curve gives for a working set that
large. ``reuse_reach`` gives, for every tensor input of every op, its LRU stack distance: the
distinct bytes touched since it was last read or written, plus its own bytes (what a cache must
hold for it to still be there). For an op repeated on its own buffers that is the op's own
bytes, which is where the curve was measured.

Identity is by storage: a captured value (``CapturedOp.input_sources``) that an op returns as an
alias of one of its arguments (a view, an in-place op's result, an ``out=`` tensor: the schema's
alias annotations) is the same storage as that argument. The program is walked twice, as the loop
it runs in repeats it (a training step, a benchmark's forwards): on the second walk, parameters,
inputs and optimizer state were last touched by the previous run.
"""

from __future__ import annotations

from typing import Sequence

from roofline.graph.ops import CapturedOp, TensorMeta

# (bytes of the input's storage, its reach in bytes: distinct bytes touched since it was last
# touched, plus its own) for each distinct storage an op reads
Reach = tuple[tuple[int, int], ...]


def extent_bytes(t: TensorMeta) -> int:
    """Bytes of memory a tensor spans (a broadcast view spans its source, not its logical size)."""
    if any(s == 0 for s in t.shape):
        return 0
    span = 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride))
    return span * t.itemsize


class _Fenwick:
    """Prefix sums over touch times: the bytes of storages whose last touch is at each time."""

    def __init__(self, n: int):
        self.tree = [0] * (n + 1)

    def add(self, i: int, v: int) -> None:
        i += 1
        while i < len(self.tree):
            self.tree[i] += v
            i += i & -i

    def prefix(self, i: int) -> int:  # sum over times [0, i)
        s = 0
        while i > 0:
            s += self.tree[i]
            i -= i & -i
        return s


def _flat_arg_index(op: CapturedOp) -> dict[str, int]:
    """Schema argument name -> index of its first tensor in ``op.tensor_inputs()`` order."""
    schema = getattr(op.target, "_schema", None)
    if schema is None:
        return {}
    out: dict[str, int] = {}
    count = 0

    def n_tensors(x) -> int:
        if isinstance(x, TensorMeta):
            return 1
        if isinstance(x, (list, tuple)):
            return sum(n_tensors(y) for y in x)
        if isinstance(x, dict):
            return sum(n_tensors(y) for y in x.values())
        return 0

    names = [a.name for a in schema.arguments]
    for i, a in enumerate(op.args):
        if i < len(names) and n_tensors(a):
            out[names[i]] = count
        count += n_tensors(a)
    for name, v in op.kwargs.items():
        if n_tensors(v):
            out[name] = count
        count += n_tensors(v)
    return out


def _aliased_inputs(op: CapturedOp) -> list[int | None]:
    """For each output of ``op``, the index of the tensor input whose storage it is (a view, an
    in-place or ``out=`` result), by the schema's alias annotations; None for new memory."""
    schema = getattr(op.target, "_schema", None)
    if schema is None or not op.outputs:
        return [None] * len(op.outputs)
    flat = _flat_arg_index(op)
    sets = {a.name: set(a.alias_info.before_set) for a in schema.arguments if a.alias_info is not None}
    returns = schema.returns
    out: list[int | None] = []
    for k in range(len(op.outputs)):
        ret = returns[min(k, len(returns) - 1)] if returns else None
        found = None
        if ret is not None and ret.alias_info is not None:
            for name, s in sets.items():
                if s & set(ret.alias_info.before_set) and name in flat:
                    found = flat[name]
                    break
        out.append(found)
    return out


def reuse_reach(ops: Sequence[CapturedOp]) -> list[Reach]:
    """Each op's ``Reach``: for every distinct storage it reads, its bytes and its LRU stack
    distance in bytes, from the second of two walks over the program (the first stands for the
    previous run of the loop it repeats in)."""
    key_of: dict[str, int] = {}  # value name -> storage key
    size_bytes: list[int] = []  # storage key -> bytes
    plans = []  # per op: (input keys, output keys)

    def new_key(nbytes: int) -> int:
        size_bytes.append(nbytes)
        return len(size_bytes) - 1

    for op in ops:
        metas = op.tensor_inputs()
        ins: list[int] = []
        for (name, _), meta in zip(op.input_sources, metas):
            key = key_of.get(name)
            if key is None:
                key = key_of[name] = new_key(0)
            size_bytes[key] = max(size_bytes[key], extent_bytes(meta))
            ins.append(key)
        outs: list[int] = []
        for k, (meta, alias) in enumerate(zip(op.outputs, _aliased_inputs(op))):
            key = ins[alias] if alias is not None and alias < len(ins) else new_key(0)
            size_bytes[key] = max(size_bytes[key], extent_bytes(meta))
            key_of[f"op.{op.index}.{k}"] = key
            outs.append(key)
        plans.append((list(dict.fromkeys(ins)), list(dict.fromkeys(outs))))

    events = 2 * sum(len(set(i) | set(o)) for i, o in plans) + 1
    tree = _Fenwick(events)
    last: dict[int, int] = {}  # storage key -> time of its last touch
    now = 0
    out: list[Reach] = []
    for walk in range(2):
        for ins, outs in plans:
            total_bytes = tree.prefix(now)
            reach = []
            for key in ins:
                t = last.get(key)
                # never touched before (the first walk only): as far as everything so far
                since_bytes = total_bytes - tree.prefix(t + 1) if t is not None else total_bytes
                reach.append((size_bytes[key], since_bytes + size_bytes[key]))
            if walk == 1:
                out.append(tuple(reach))
            for key in dict.fromkeys(ins + outs):
                t = last.get(key)
                if t is not None:
                    tree.add(t, -size_bytes[key])
                tree.add(now, size_bytes[key])
                last[key] = now
                now += 1
    return out
