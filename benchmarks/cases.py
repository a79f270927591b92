"""What the benchmark scripts share: picking an example's model by sweep label, loading it twice
(on the meta device to predict, real to time), and the dtype the examples read from the environment."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from roofline.graph.capture import normalize_inputs
from roofline.graph.loading import load_model_file
from roofline.pipeline import Analysis, Options

REPO = Path(__file__).resolve().parent.parent


def pick(loaded, sweep_label: str | None):
    """(model, args, kwargs) of a loaded model file, or of the sweep entry whose label matches."""
    if sweep_label is None:
        return loaded.model, loaded.args, loaded.kwargs
    sweep = getattr(loaded.module, "sweep", None)
    if sweep is None:
        raise SystemExit(f"{loaded.path} has no sweep()")
    want = set(sweep_label.replace(" ", ",").split(",")) - {""}
    labels = []
    for label, model, inputs in sweep():
        labels.append(label)
        if want <= set(label.replace(" ", ",").split(",")):
            return (model, *normalize_inputs(inputs))
    raise SystemExit(f"{loaded.path}: no sweep entry {sweep_label!r}; have {labels}")


def use_example_dtype(dtype: str | None) -> None:
    """Set (or clear, for the file's default) the dtype the example files read from the environment."""
    if dtype:
        os.environ["ROOFLINE_EXAMPLE_DTYPE"] = dtype
    else:
        os.environ.pop("ROOFLINE_EXAMPLE_DTYPE", None)


def load_meta(file: str, sweep_label: str | None):
    """An example's (model, args, kwargs) on the meta device (no memory), for prediction."""
    meta = load_model_file(REPO / "examples" / file)
    with torch.device("meta"):
        return pick(meta, sweep_label)


def load_case(file: str, sweep_label: str | None, profile, device: str):
    """An example on a GPU: (analysis, real model, real args, real kwargs): the prediction with
    ``profile`` from a capture on the GPU, and the real model and inputs on ``device``, ready to time."""
    from roofline.graph.structure import map_tensors

    mm, ma, mk = load_meta(file, sweep_label)
    rm, ra, rk = pick(load_model_file(REPO / "examples" / file, materialize=True), sweep_label)
    analysis = Analysis.of(mm, ma, mk, profile, Options(device="cuda", batch_sweep=False, capture_device="cuda"), name=file)
    model = rm.to(device).eval() if isinstance(rm, torch.nn.Module) else rm
    move = lambda t: t.to(device)  # noqa: E731
    return analysis, model, map_tensors(ra, move), map_tensors(rk, move)
