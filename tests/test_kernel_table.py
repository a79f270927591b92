"""The shape-exact kernel table: keys, timing one op on fresh tensors, and prediction using it."""

import torch

from calibrate.kernels import time_graph_kernels, time_op
from roofline.graph.capture import capture
from roofline.model.kernel_table import kernel_key
from roofline.pipeline import Analysis, Options
from roofline.profiles import load_profile_file
from roofline.schema.profile import KernelEntry, Stat
from tests.conftest import REPO

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 32)).eval()


def test_keys_name_shape_stride_dtype_and_arguments():
    x = torch.randn(4, 32)
    one, two = capture(mlp(), (x,)), capture(mlp(), (x,))
    assert [kernel_key(a) for a in one.ops] == [kernel_key(b) for b in two.ops]
    other = capture(mlp(), (torch.randn(5, 32),))
    assert kernel_key(one.ops[-1]) != kernel_key(other.ops[-1])
    half = capture(mlp().half(), (x.half(),))
    assert kernel_key(one.ops[-1]) != kernel_key(half.ops[-1])
    addmm = next(op for op in one.ops if op.name == "aten.addmm.default")
    assert "float32[4, 32]" in kernel_key(addmm) and addmm.name in kernel_key(addmm)


def test_an_op_is_timed_on_fresh_tensors_of_its_signature():
    graph = capture(mlp(), (torch.randn(4, 32),))
    addmm = next(op for op in graph.ops if op.name == "aten.addmm.default")
    assert time_op(addmm, "cpu", budget_s=0.002).median_s > 0
    entries = time_graph_kernels(graph, "cpu", budget_s=0.002)
    keys = [e.key for e in entries]
    assert len(keys) == len(set(keys)) and {e.op for e in entries} >= {"aten.addmm.default", "aten.gelu.default"}
    assert time_graph_kernels(graph, "cpu", set(keys), budget_s=0.002) == []  # known kernels are not timed again


def test_prediction_uses_the_table_before_the_curves():
    profile = load_profile_file(PROFILE)
    model, x = mlp(), torch.randn(4, 32)
    plain = Analysis.of(model, (x,), None, profile, Options(device="cuda", batch_sweep=False))
    plain_s = plain.total_s
    gelu = next(op for op in plain.graph.ops if op.name == "aten.gelu.default")
    profile.gpu.measurements.kernels.append(KernelEntry(key=kernel_key(gelu), op=gelu.name, time=Stat(median_s=123e-6, iqr_s=0.0, samples=5)))
    timed = Analysis(plain.graph, profile, "cuda", Options(device="cuda", batch_sweep=False))
    ops = {op.target: op for op in timed.report().ops}
    assert ops["aten.gelu.default"].kernel_s == 123e-6 and ops["aten.gelu.default"].kernel_source == "table"
    assert ops["aten.addmm.default"].kernel_source == "curve"
    assert timed.total_s > plain_s + 50e-6
    assert any("kernel table" in line for line in timed.report().advice)
