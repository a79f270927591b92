"""What the benchmark scripts share: picking an example's model by sweep label, loading it twice
(on the meta device to predict, real to time), and the dtype the examples read from the environment."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from roofline.analysis import run_analysis
from roofline.loading import load_model_file

REPO = Path(__file__).resolve().parent.parent


def pick(loaded, sweep_label: str | None):
    """The default model and inputs of a loaded model file, or the sweep entry whose label matches."""
    if sweep_label is None:
        return loaded.model, loaded.example_inputs
    sweep = getattr(loaded.module, "sweep", None)
    if sweep is None:
        raise SystemExit(f"{loaded.path} has no sweep()")
    want = set(sweep_label.replace(" ", ",").split(",")) - {""}
    labels = []
    for label, model, inputs in sweep():
        labels.append(label)
        if want <= set(label.replace(" ", ",").split(",")):
            return model, inputs
    raise SystemExit(f"{loaded.path}: no sweep entry {sweep_label!r}; have {labels}")


def use_example_dtype(dtype: str | None) -> None:
    """Set (or clear, for the file's default) the dtype the example files read from the environment."""
    if dtype:
        os.environ["ROOFLINE_EXAMPLE_DTYPE"] = dtype
    else:
        os.environ.pop("ROOFLINE_EXAMPLE_DTYPE", None)


def load_meta(file: str, sweep_label: str | None):
    """An example's model and inputs on the meta device (no memory), for prediction."""
    meta = load_model_file(REPO / "examples" / file)
    with torch.device("meta"):
        return pick(meta, sweep_label)


def load_case(file: str, sweep_label: str | None, profile, device: str):
    """An example on a GPU: (report, meta model, meta inputs, captured graph, real model, real
    inputs): the prediction with ``profile`` as it stands, the graph captured on the GPU (to predict
    again after a refresh), and the real pair on ``device``, ready to time."""
    mm, mi = load_meta(file, sweep_label)
    rm, ri = pick(load_model_file(REPO / "examples" / file, materialize=True), sweep_label)
    report, graph, _ = run_analysis(mm, mi, profile, device="cuda", name=file, batch_sweep=False, capture_device="cuda")
    model = rm.to(device).eval() if isinstance(rm, torch.nn.Module) else rm
    inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in ri)
    return report, mm, mi, graph, model, inputs


