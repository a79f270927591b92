"""A captured graph written as JSON and read back prices exactly as the captured one."""

import json

import torch

from roofline.graph.capture import capture
from roofline.graph.serialize import graph_from_dict, graph_to_dict, resolve_op
from roofline.pipeline import Analysis, Options
from tests.conftest import REPO

PROFILE = str(REPO / "tests" / "fixtures" / "h100_profile.json")


class Mixed(torch.nn.Module):
    """Ops whose arguments are dtypes, memory formats, lists, None and keyword tensors."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x, scale=None):
        y = self.conv(x.contiguous(memory_format=torch.channels_last)).to(torch.float16).float()
        y = self.norm(y.permute(0, 2, 3, 1))
        return torch.cat([y, y * scale], dim=-1).sum(dim=(1, 2), keepdim=False)


def test_round_trip_prices_the_same():
    x, scale = torch.randn(2, 3, 16, 16), torch.randn(8)
    graph = capture(Mixed(), (x,), {"scale": scale})
    back = graph_from_dict(json.loads(json.dumps(graph_to_dict(graph))))
    assert [op.target for op in back.ops] == [op.target for op in graph.ops]
    assert [(op.args, op.kwargs, op.outputs) for op in back.ops] == [(op.args, op.kwargs, op.outputs) for op in graph.ops]
    assert [(op.input_sources, op.users, op.is_output, op.module) for op in back.ops] == [(op.input_sources, op.users, op.is_output, op.module) for op in graph.ops]
    assert any(isinstance(a, torch.dtype) for op in back.ops for a in (*op.args, *op.kwargs.values()))
    one = Analysis(graph, PROFILE_OBJ(), "cuda", Options(device="cuda"))
    two = Analysis(back, PROFILE_OBJ(), "cuda", Options(device="cuda"))
    assert one.total_s == two.total_s and one.fused_total_s == two.fused_total_s


def test_an_op_this_torch_lacks_stays_its_name():
    assert resolve_op("aten.mm.default") is torch.ops.aten.mm.default
    assert resolve_op("aten.no_such_op_anywhere.default") == "aten.no_such_op_anywhere.default"


def PROFILE_OBJ():
    from roofline.profiles import load_profile_file

    return load_profile_file(PROFILE)


def test_a_training_step_keeps_its_phases_and_step_info():
    from roofline.graph.training import TrainStep

    step = TrainStep(optimizer="adamw", implementation="foreach")
    graph = capture(torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)), (torch.randn(4, 8),), train=step)
    back = graph_from_dict(json.loads(json.dumps(graph_to_dict(graph))))
    assert [op.phase for op in back.ops] == [op.phase for op in graph.ops]
    assert {op.phase for op in back.ops} == {"forward", "backward", "optimizer"}
    assert [(op.grad_of, op.host_scalar, op.records_grad) for op in back.ops] == [(op.grad_of, op.host_scalar, op.records_grad) for op in graph.ops]
    assert back.training == graph.training
    options = Options(device="cuda", train=step, batch_sweep=False)
    one, two = Analysis(graph, PROFILE_OBJ(), "cuda", options), Analysis(back, PROFILE_OBJ(), "cuda", options)
    assert one.training.predicted_s == two.training.predicted_s
    assert one.training.memory.peak_bytes == two.training.memory.peak_bytes
