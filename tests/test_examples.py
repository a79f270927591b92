"""Every file under examples/ follows the model-file convention and runs.

For each example: it has a module docstring; it defines ``model`` and ``example_inputs`` (a
tuple) or ``get_model()`` and ``get_example_inputs()``; it builds under
``with torch.device("meta"):`` with every parameter, buffer and input on meta (no explicit
devices), and its forward runs there; its ``sweep()``, if any, yields at least two well-formed
entries, all of which build and run on meta. Then the forward runs once on real CPU tensors:
the default when it is cheap (estimated from the FLOPs and bytes the meta run counted, so
the test stays well under its time budget on a 2-core machine), else the first ``sweep()``
entry; gpt2_xl.py and conv_big.py are checked on meta only.
"""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
EXAMPLES = sorted(p for p in EXAMPLES_DIR.glob("*.py") if not p.name.startswith("_"))
IDS = [p.name for p in EXAMPLES]

# Far too large for a CPU run in a unit test: build and run on meta only.
META_ONLY = {"gpt2_xl.py", "conv_big.py"}
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
    if "get_model" in ns and "get_example_inputs" in ns:
        return ns["get_model"](), ns["get_example_inputs"]()
    if "model" in ns and "example_inputs" in ns:
        return ns["model"], ns["example_inputs"]
    raise AssertionError(
        "defines neither get_model()/get_example_inputs() nor model/example_inputs"
    )


def build_on_meta(path: Path) -> tuple[dict, object, tuple]:
    with torch.device("meta"):
        ns = load(path)
        model, inputs = model_and_inputs(ns)
    return ns, model, inputs


def tensors_of(model, inputs) -> list[torch.Tensor]:
    out = [t for t in inputs if isinstance(t, torch.Tensor)]
    if isinstance(model, torch.nn.Module):
        out += list(model.parameters()) + list(model.buffers())
    return out


def nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def check_entry(model, inputs) -> None:
    assert callable(model), f"model {type(model).__name__} is not callable"
    assert isinstance(inputs, tuple), f"example inputs must be a tuple, got {type(inputs).__name__}"
    assert any(isinstance(t, torch.Tensor) for t in inputs), "no tensor among the example inputs"


def forward(model, inputs):
    with torch.no_grad():
        return model(*inputs)


def output_tensors(out) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in output_tensors(o)]
    return []


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_docstring(path: Path):
    doc = ast.get_docstring(ast.parse(path.read_text()))
    assert doc and len(doc.split()) >= 20, (
        f"{path.name}: needs a module docstring (what it models, which seed, the regime)"
    )


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_meta_build_and_forward(path: Path):
    ns, model, inputs = build_on_meta(path)
    check_entry(model, inputs)
    for t in tensors_of(model, inputs):
        assert t.device.type == "meta", (
            f"{path.name}: a tensor was created on {t.device}, not on the ambient device"
        )
    out = forward(model, inputs)
    assert output_tensors(out), f"{path.name}: forward returned no tensor"
    assert all(o.device.type == "meta" for o in output_tensors(out))


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_sweep(path: Path):
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
            check_entry(model, inputs)
            if not labels:
                forward(model, inputs)  # the smallest entry and the largest run, the rest are built
            labels.append(label)
            last = entry
        forward(last[1], last[2])
    assert len(labels) >= 2, f"{path.name}: sweep() yields {len(labels)} entries"
    assert len(set(labels)) == len(labels), f"{path.name}: duplicate sweep labels {labels}"


@pytest.mark.parametrize("path", EXAMPLES, ids=IDS)
def test_cpu_forward(path: Path):
    if path.name in META_ONLY:
        pytest.skip("meta only: too large for a CPU run")
    ns, model, inputs = build_on_meta(path)
    counter = FlopCounterMode(display=False)
    with counter:
        forward(model, inputs)
    flops = counter.get_total_flops()
    size = nbytes(tensors_of(model, inputs))
    if flops <= CPU_FLOP_BUDGET and size <= CPU_BYTE_BUDGET:
        model, inputs = model_and_inputs(ns)
    else:
        assert "sweep" in ns, (
            f"{path.name}: default costs {flops:.3g} FLOPs / {size} B on the CPU and there is no "
            "sweep() to shrink it; add one or list the file in META_ONLY"
        )
        _, model, inputs = next(iter(ns["sweep"]()))
    tensors = tensors_of(model, inputs)
    assert all(t.device.type == "cpu" for t in tensors)
    outs = output_tensors(forward(model, inputs))
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
    ns, model, inputs = build_on_meta(path)
    floats = [t for t in tensors_of(model, inputs) if t.is_floating_point()]
    assert floats and all(t.dtype == torch.float16 for t in floats), (
        f"{path.name}: {DTYPE_ENV}=float16 not honoured: {sorted({str(t.dtype) for t in floats})}"
    )
    assert ns["DTYPE"] == torch.float16
    monkeypatch.setenv(DTYPE_ENV, "float64x")
    with pytest.raises(ValueError, match=DTYPE_ENV):
        load(path)


# --- what individual examples promise in their docstrings --------------------------------


def aten_counts(model, inputs) -> dict[str, int]:
    from torch.fx.experimental.proxy_tensor import make_fx

    with torch.no_grad():
        gm = make_fx(model)(*inputs)
    counts: dict[str, int] = {}
    for node in gm.graph.nodes:
        if node.op == "call_function":
            name = getattr(node.target, "__name__", str(node.target))
            counts[name] = counts.get(name, 0) + 1
    return counts


def test_seed002_is_one_matmul_and_five_pointwise():
    ns, model, inputs = build_on_meta(EXAMPLES_DIR / "seed002_rnn_step.py")
    assert ns["STEPS"] == 10_000
    counts = aten_counts(model, inputs)
    assert counts == {"mm.default": 1, "add.Tensor": 2, "neg.default": 1,
                      "sigmoid.default": 1, "mul.Tensor": 1}, counts


def test_seed003_has_distinct_layers_and_inplace_relu():
    ns, model, inputs = build_on_meta(EXAMPLES_DIR / "seed003_linear_relu.py")
    linears = [m for m in model if isinstance(m, torch.nn.Linear)]
    assert len(linears) == 8 and len({id(m) for m in linears}) == 8
    counts = aten_counts(model, inputs)
    assert counts.get("addmm.default") == 8 and counts.get("relu_.default") == 8, counts
    with torch.device("meta"):
        assert len(list(ns["sweep"]())) == 6 * 4


def test_rnn_loop_defeats_symbolic_trace_but_not_make_fx():
    ns, model, inputs = build_on_meta(EXAMPLES_DIR / "rnn_loop.py")
    with pytest.raises(TypeError, match="Proxy"):
        torch.fx.symbolic_trace(model)  # range(x.shape[0]) over a Proxy
    counts = aten_counts(model, inputs)
    assert counts.get("tanh.default") == ns["STEPS"] == 50, counts


def test_gpt2_xl_size_and_tied_head():
    ns, model, inputs = build_on_meta(EXAMPLES_DIR / "gpt2_xl.py")
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
