"""A captured step replayed op by op on real tensors (what ``--measure`` profiles per op): every
tensor an op reads is found, where the captured run had it."""

import json

import torch

from roofline.graph.capture import _ReplayPlan, capture
from roofline.graph.replay import bind, replay
from roofline.graph.serialize import graph_from_dict
from roofline.graph.training import TrainStep
from tests.conftest import REPO

# small_mlp's AdamW (foreach) step as the H100 captured it (benchmarks/train_check.py --per-op):
# parameters and moments on cuda, the step counts and the 1 added to them CPU scalars
H100_STEP = REPO / "tests" / "fixtures" / "h100_train_small_mlp_graph.json"


def _mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))


def test_a_training_step_replays_with_its_optimizer_state():
    step = TrainStep(optimizer="adamw", implementation="foreach")
    model, x = _mlp(), torch.randn(4, 64)
    graph = capture(model, (x,), train=step)
    values = bind(graph, dict(model.named_parameters()), (x,), {}, "cpu")
    assert [n for n in values if n.startswith("optim.")]
    with torch.no_grad():
        replay(graph, values)
    # captured on the CPU, replayed on another device (meta stands for the GPU): the moments go
    # there, the step counts stay on the CPU as torch keeps them
    values = bind(graph, {n: t.detach().to("meta") for n, t in model.named_parameters()}, (x.to("meta"),), {}, "meta")
    moments = [n for n in values if n.startswith("optim.") and not n.endswith(".step")]
    steps = [n for n in values if n.startswith("optim.") and n.endswith(".step")]
    assert moments and steps
    assert all(values[n].device.type == "meta" for n in moments)
    assert all(values[n].device.type == "cpu" for n in steps)


def test_the_h100_step_keeps_cpu_scalars_on_the_cpu():
    graph = graph_from_dict(json.loads(H100_STEP.read_text()))
    constants = {name: meta for op in graph.ops for meta, (name, _) in zip(op.tensor_inputs(), op.input_sources) if name.startswith("const.")}
    graph.replay = _ReplayPlan(inputs=1, state=[], constants=constants, real=False)
    values = bind(graph, {}, (torch.empty(1),), {}, "meta")  # meta stands for the GPU
    steps = [n for n in values if n.startswith("optim.") and n.endswith(".step")]
    moments = [n for n in values if n.startswith("optim.") and not n.endswith(".step")]
    assert steps and moments
    assert all(values[n].device.type == "cpu" for n in steps)  # torch keeps Adam's step counts on the CPU
    assert all(values[n].device.type == "meta" for n in moments)
    scalars = [n for n, meta in constants.items() if meta.device == "cpu" and meta.shape == ()]
    assert scalars and all(values[n].device.type == "cpu" for n in scalars)  # foreach adds a CPU 1 to CPU counts
