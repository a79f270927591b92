"""Every file under examples/ follows the model-file convention and runs.

For each example: it has a module docstring; it defines ``model`` and ``example_inputs`` (a tuple,
or a dict of keyword inputs) or ``get_model()`` and ``get_example_inputs()``; it builds under
``with torch.device("meta"):`` with every parameter, buffer and input on meta (no explicit devices),
and roofline captures it from there; its ``sweep()``, if any, yields at least two well-formed
entries, all of which build on meta. Then the forward runs once on real CPU tensors: the default
when it is cheap (estimated from the FLOPs and bytes the capture priced, so the test stays well
under its time budget on a 2-core machine), else the first ``sweep()`` entry; the files of
``META_ONLY`` are checked on meta only.
"""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import pytest
import torch

from roofline.costs import cost_of
from roofline.graph.capture import capture, normalize_inputs
from roofline.graph.structure import tensors_in

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
IDS = [p.name for p in EXAMPLES]

# Far too large for a CPU run in a unit test: build and capture on meta only.
META_ONLY = {"gpt2_xl.py", "conv_big.py", "hf_llama.py", "hf_bert.py", "hf_vit.py", "hf_whisper.py", "transformer_encoder.py"}
# What a real CPU forward may cost before the test falls back to the first sweep() entry:
# ~1e10 FLOPs is well under 2 s on two cores; 512 MiB bounds parameters + inputs.
CPU_FLOP_BUDGET = 1e10
CPU_BYTE_BUDGET = 512 * 2**20

DTYPE_ENV = "ROOFLINE_EXAMPLE_DTYPE"


@pytest.fixture(autouse=True)
def _default_dtype(monkeypatch):
    """The defaults are under test: ignore a ROOFLINE_EXAMPLE_DTYPE set in the environment."""
    monkeypatch.delenv(DTYPE_ENV, raising=False)


def load(path: Path) -> dict:
    return runpy.run_path(str(path), run_name=f"roofline_example_{path.stem}")


def model_and_inputs(ns: dict) -> tuple:
    """(model, args, kwargs) of a loaded example."""
    if "get_model" in ns and "get_example_inputs" in ns:
        return (ns["get_model"](), *normalize_inputs(ns["get_example_inputs"]()))
    if "model" in ns and "example_inputs" in ns:
        return (ns["model"], *normalize_inputs(ns["example_inputs"]))
    raise AssertionError(
        "defines neither get_model()/get_example_inputs() nor model/example_inputs"
    )


def build_on_meta(path: Path) -> tuple[dict, object, tuple, dict]:
    with torch.device("meta"):
        ns = load(path)
        model, args, kwargs = model_and_inputs(ns)
    return ns, model, args, kwargs


def tensors_of(model, args, kwargs=None) -> list[torch.Tensor]:
    out = list(tensors_in((args, kwargs or {})))
    if isinstance(model, torch.nn.Module):
        out += list(model.parameters()) + list(model.buffers())
    return out


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def check_entry(model, args, kwargs=None) -> None:
    assert callable(model), f"model {type(model).__name__} is not callable"
    assert isinstance(args, tuple), f"example inputs must be a tuple, got {type(args).__name__}"
    assert any(True for _ in tensors_in((args, kwargs or {}))), "no tensor among the example inputs"


def forward(model, args, kwargs=None):
    with torch.no_grad():
        return model(*args, **(kwargs or {}))


def output_tensors(out) -> list[torch.Tensor]:
    return list(tensors_in(out))


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_docstring(path: Path):
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and len(doc.split()) >= 20, (
        f"{path.name}: needs a module docstring (what it models, which seed, the regime)"
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_meta_build_and_capture(path: Path):
    ns, model, args, kwargs = build_on_meta(path)
    check_entry(model, args, kwargs)
    for t in tensors_of(model, args, kwargs):
        assert t.device.type == "meta", (
            f"{path.name}: a tensor was created on {t.device}, not on the ambient device"
        )
    graph = capture(model, args, kwargs)
    assert graph.ops and graph.outputs, f"{path.name}: the capture recorded no op or no output"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_sweep(path: Path):
    with torch.device("meta"):
        ns = load(path)
    if "sweep" not in ns:
        pytest.skip("no sweep()")
    labels, last = [], None
    with torch.device("meta"):
        for entry in ns["sweep"]():
            assert isinstance(entry, tuple) and len(entry) == 3, (
                "sweep() must yield (label, model, example_inputs)"
            )
            label, model, inputs = entry
            assert isinstance(label, str) and label
            check_entry(model, *normalize_inputs(inputs))
            if not labels:
                forward(model, *normalize_inputs(inputs))  # the smallest entry and the largest run, the rest are built
            labels.append(label)
            last = entry
        forward(last[1], *normalize_inputs(last[2]))
    assert len(labels) >= 2, f"{path.name}: sweep() yields {len(labels)} entries"
    assert len(set(labels)) == len(labels), f"{path.name}: duplicate sweep labels {labels}"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_cpu_forward(path: Path):
    if path.name in META_ONLY:
        pytest.skip("meta only: too large for a CPU run")
    ns, model, args, kwargs = build_on_meta(path)
    flops = sum(cost_of(op)[0].flops for op in capture(model, args, kwargs).ops)
    size = nbytes(tensors_of(model, args, kwargs))
    if flops <= CPU_FLOP_BUDGET and size <= CPU_BYTE_BUDGET:
        model, args, kwargs = model_and_inputs(load(path))
    else:
        assert "sweep" in ns, (
            f"{path.name}: default costs {flops:.3g} FLOPs / {size} B on the CPU and there is no "
            "sweep() to shrink it; add one or list the file in META_ONLY"
        )
        _, model, inputs = next(iter(ns["sweep"]()))
        args, kwargs = normalize_inputs(inputs)
    tensors = tensors_of(model, args, kwargs)
    assert all(t.device.type == "cpu" for t in tensors)
    outs = output_tensors(forward(model, args, kwargs))
    assert outs
    for o in outs:
        if o.is_floating_point():
            assert torch.isfinite(o).all(), f"{path.name}: non-finite output"


@pytest.mark.parametrize(
    "path", [p for p in EXAMPLES if DTYPE_ENV in p.read_text()],
    ids=[p.name for p in EXAMPLES if DTYPE_ENV in p.read_text()],
)
def test_dtype_env(path: Path, monkeypatch):
    monkeypatch.setenv(DTYPE_ENV, "float16")
    ns, model, args, kwargs = build_on_meta(path)
    floats = [t for t in tensors_of(model, args, kwargs) if t.is_floating_point()]
    assert floats and all(t.dtype == torch.float16 for t in floats), (
        f"{path.name}: {DTYPE_ENV}=float16 not honoured: {sorted({str(t.dtype) for t in floats})}"
    )
    assert ns["DTYPE"] == torch.float16
    monkeypatch.setenv(DTYPE_ENV, "float64x")
    with pytest.raises(ValueError, match=DTYPE_ENV):
        load(path)


# --- what individual examples promise in their docstrings --------------------------------


def aten_counts(model, inputs) -> dict[str, int]:
    """How many times each aten op (by overload, e.g. ``mm.default``) runs in one forward."""
    counts: dict[str, int] = {}
    for op in capture(model, inputs).ops:
        name = op.name.split(".", 1)[1]
        counts[name] = counts.get(name, 0) + 1
    return counts


def test_seed002_is_one_matmul_and_five_pointwise():
    ns, model, inputs, _ = build_on_meta(EXAMPLES_DIR / "seed002_rnn_step.py")
    assert ns["STEPS"] == 10_000
    counts = aten_counts(model, inputs)
    assert counts == {"mm.default": 1, "add.Tensor": 2, "neg.default": 1,
                      "sigmoid.default": 1, "mul.Tensor": 1}, counts


def test_seed003_has_distinct_layers_and_inplace_relu():
    ns, model, inputs, _ = build_on_meta(EXAMPLES_DIR / "seed003_linear_relu.py")
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 8 and len({id(m) for m in linears}) == 8
    counts = aten_counts(model, inputs)
    assert counts.get("addmm.default") == 8 and counts.get("relu_.default") == 8, counts
    with torch.device("meta"):
        assert len(list(ns["sweep"]())) == 6 * 4


def test_rnn_loop_defeats_symbolic_trace_but_not_the_capture():
    ns, model, inputs, _ = build_on_meta(EXAMPLES_DIR / "rnn_loop.py")
    with pytest.raises(TypeError, match="Proxy"):
        torch.fx.symbolic_trace(model)  # range(x.shape[0]) over a Proxy
    counts = aten_counts(model, inputs)
    assert counts.get("tanh.default") == ns["STEPS"] == 50, counts


def test_gpt2_xl_size_and_tied_head():
    ns, model, inputs, _ = build_on_meta(EXAMPLES_DIR / "gpt2_xl.py")
    n_params = sum(p.numel() for p in model.parameters())  # tied weights counted once
    assert n_params == 1_557_611_200
    assert model.lm_head.weight is model.wte.weight
    assert inputs[0].shape == (1, 1024) and inputs[0].dtype == torch.int64


def test_seed000_matmul_sweep_dims():
    ns = load(EXAMPLES_DIR / "seed000_matmul.py")
    with torch.device("meta"):
        dims = [inputs[0].shape[0] for _, _, inputs in ns["sweep"]()]
    assert dims == [2**i for i in range(15)]
    assert not isinstance(ns["get_model"](), torch.nn.Module)  # a plain function, as in the seed
    with torch.device("meta"):
        x, y = ns["get_example_inputs"]()
    assert x.shape == y.shape == (4096, 4096) and x.dtype == torch.float32
