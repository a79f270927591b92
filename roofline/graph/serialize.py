"""A captured graph as plain JSON values, and back: what lets a recorded run be priced again later.

An accuracy record keeps each model's graph as it was captured on the device, so that a change to
the model of time can be judged on a machine with neither that GPU nor the model's library
(``benchmarks/accuracy.py --zoo --replay``). Tensors are metadata only; each distinct one is stored
once in a table and referenced by position. Ops are stored by their aten name and resolved back to
the ``OpOverload`` of the torch that reads them (an op this torch lacks stays its name: it is
priced as unsupported, by bytes). A training step's graph keeps what marks its ops (phase, the
module a backward op differentiates, host scalars, autograd's records) and the step's ``StepInfo``.
"""

from __future__ import annotations

from typing import Any

import torch

from roofline.graph.ops import CapturedGraph, CapturedOp, TensorMeta
from roofline.graph.training import StepInfo

FORMAT = 1
_DTYPES = {str(d).removeprefix("torch."): d for d in vars(torch).values() if isinstance(d, torch.dtype)}
_MEMORY_FORMATS = {str(f).removeprefix("torch."): f for f in (torch.contiguous_format, torch.channels_last, torch.channels_last_3d, torch.preserve_format)}
_LAYOUTS = {str(x).removeprefix("torch."): x for x in (torch.strided, torch.sparse_coo, torch.sparse_csr, torch._mkldnn) if isinstance(x, torch.layout)}


class _Tensors:
    """The table of distinct tensors of one graph."""

    def __init__(self):
        self.rows: list[list] = []
        self.index: dict[TensorMeta, int] = {}

    def ref(self, t: TensorMeta) -> int:
        if t not in self.index:
            self.index[t] = len(self.rows)
            self.rows.append([list(t.shape), list(t.stride), _dtype_name(t.dtype), t.device, t.storage_offset])
        return self.index[t]


def _dtype_name(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def _encode(x: Any, tensors: _Tensors) -> Any:
    if isinstance(x, TensorMeta):
        return {"T": tensors.ref(x)}
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, list):
        return [_encode(v, tensors) for v in x]
    if isinstance(x, tuple):
        return {"t": [_encode(v, tensors) for v in x]}
    if isinstance(x, dict):
        return {"d": {str(k): _encode(v, tensors) for k, v in x.items()}}
    if isinstance(x, torch.dtype):
        return {"dtype": _dtype_name(x)}
    if isinstance(x, torch.device):
        return {"device": str(x)}
    if isinstance(x, torch.memory_format):
        return {"mf": str(x).removeprefix("torch.")}
    if isinstance(x, torch.layout):
        return {"layout": str(x).removeprefix("torch.")}
    return {"repr": repr(x)}  # a value no formula reads (a generator, an opaque object)


def _decode(x: Any, tensors: list[TensorMeta]) -> Any:
    if isinstance(x, list):
        return [_decode(v, tensors) for v in x]
    if not isinstance(x, dict):
        return x
    (key, value), = x.items()
    if key == "T":
        return tensors[value]
    if key == "t":
        return tuple(_decode(v, tensors) for v in value)
    if key == "d":
        return {k: _decode(v, tensors) for k, v in value.items()}
    if key == "dtype":
        return _DTYPES[value]
    if key == "device":
        return torch.device(value)
    if key == "mf":
        return _MEMORY_FORMATS.get(value, value)
    if key == "layout":
        return _LAYOUTS.get(value, value)
    return value


def resolve_op(name: str) -> Any:
    """``aten.mm.default`` -> ``torch.ops.aten.mm.default``; the name itself where this torch lacks it."""
    parts = name.split(".")
    if len(parts) != 3:
        return name
    try:
        return getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
    except (AttributeError, RuntimeError):
        return name


def graph_to_dict(graph: CapturedGraph) -> dict:
    """A JSON-ready dict of the graph (no replay plan: replaying needs the real model anyway)."""
    tensors = _Tensors()
    ops = [
        [
            op.name, _encode(op.args, tensors), _encode(op.kwargs, tensors), [tensors.ref(t) for t in op.outputs],
            op.module, op.module_type, op.source, list(op.input_ops), list(op.users), op.is_output,
            [[n, p] for n, p in op.input_sources], op.torch_call,
        ]
        for op in graph.ops
    ]
    return {
        "format": FORMAT, "tensors": tensors.rows, "ops": ops,
        "inputs": [tensors.ref(t) for t in graph.inputs], "outputs": [tensors.ref(t) for t in graph.outputs],
        "parameters_bytes": graph.parameters_bytes, "module_calls": graph.module_calls, "state_tensors": graph.state_tensors,
        "capture_mode": graph.capture_mode, "warnings": list(graph.warnings), "host_reads": list(graph.host_reads), "library_checks": list(graph.library_checks),
        "library_check_ops": list(graph.library_check_ops), "python_calls": {str(op.index): op.python_calls for op in graph.ops if op.python_calls},
        **(_training_to_dict(graph) if graph.training is not None else {}),
    }


def _training_to_dict(graph: CapturedGraph) -> dict:
    """A training step's marks on its ops (those that differ from a forward op's) and its StepInfo."""
    marks = {
        str(op.index): [op.phase, op.grad_of, op.host_scalar, op.records_grad]
        for op in graph.ops if (op.phase, op.grad_of, op.host_scalar, op.records_grad) != ("forward", "", False, False)
    }
    info = dict(vars(graph.training))
    info["parameter_shapes"] = [[list(shape), _dtype_name(dtype)] for shape, dtype in info["parameter_shapes"]]
    info["gradients"] = [list(g) for g in info["gradients"]]
    return {"training_marks": marks, "training": info}


def _training_from_dict(data: dict, ops: list[CapturedOp]) -> StepInfo:
    for i, (phase, grad_of, host_scalar, records_grad) in data["training_marks"].items():
        op = ops[int(i)]
        op.phase, op.grad_of, op.host_scalar, op.records_grad = phase, grad_of, host_scalar, records_grad
    info = dict(data["training"])
    info["parameter_shapes"] = [(tuple(shape), _DTYPES[dtype]) for shape, dtype in info["parameter_shapes"]]
    info["gradients"] = [tuple(g) for g in info["gradients"]]
    return StepInfo(**info)


def graph_from_dict(data: dict) -> CapturedGraph:
    """The graph ``graph_to_dict`` wrote, with each op resolved against this torch."""
    if data.get("format") != FORMAT:
        raise ValueError(f"graph format {data.get('format')!r}, this code reads {FORMAT}")
    tensors = [
        TensorMeta(shape=tuple(shape), stride=tuple(stride), dtype=_DTYPES[dtype], device=device, storage_offset=offset)
        for shape, stride, dtype, device, offset in data["tensors"]
    ]
    ops = [
        CapturedOp(
            index=i, target=resolve_op(name), args=_decode(args, tensors), kwargs=_decode(kwargs, tensors),
            outputs=tuple(tensors[j] for j in outputs), module=module, module_type=module_type, source=source,
            input_ops=tuple(input_ops), users=tuple(users), is_output=is_output,
            input_sources=tuple((n, p) for n, p in input_sources), torch_call=torch_call,
        )
        for i, (name, args, kwargs, outputs, module, module_type, source, input_ops, users, is_output, input_sources, torch_call) in enumerate(data["ops"])
    ]
    for i, n in data.get("python_calls", {}).items():
        ops[int(i)].python_calls = n
    training = _training_from_dict(data, ops) if "training" in data else None
    graph = CapturedGraph(
        ops=ops, inputs=[tensors[j] for j in data["inputs"]], outputs=[tensors[j] for j in data["outputs"]],
        parameters_bytes=data["parameters_bytes"], module_calls=data["module_calls"], state_tensors=data["state_tensors"],
        capture_mode=data["capture_mode"], warnings=list(data["warnings"]), host_reads=list(data.get("host_reads", [])), library_checks=list(data.get("library_checks", [])),
        library_check_ops=list(data.get("library_check_ops", [])),
    )
    graph.training = training
    return graph
