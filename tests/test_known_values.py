"""The values a capture knows (``roofline.graph.values``) and the library guard (``roofline.graph.guards``):
each source of known values answers a model's read of them, a value that may have changed is forgotten,
random ops are not computed, and a library's own check is a host sync of eager runs only."""

import sys
import types

import pytest
import torch
from torch import nn

from roofline.advice.applicability import host_syncs
from roofline.errors import CaptureError
from roofline.graph.capture import capture
from roofline.graph.serialize import graph_from_dict, graph_to_dict
from roofline.graph.values import Recipes


def names(graph):
    return [op.name for op in graph.ops]


def branch(flag) -> torch.Tensor:
    """What the models below return: mul when the read said True, add when it said False."""
    return flag


class OnFill(nn.Module):
    def forward(self, x):
        ones = x.new_ones(4)  # a fill: its values do not depend on x's
        return x * 2 if bool(ones.all()) else x + 1


class OnLiteral(nn.Module):
    def forward(self, x):
        flags = torch.tensor([1, 1, 0])  # Python data lifted into a tensor
        return x * 2 if int(flags.sum()) == 2 else x + 1


CONSTANT = torch.tensor([3.0, 4.0])  # a real tensor of the model's code, outside the capture


class OnConstant(nn.Module):
    def forward(self, x):
        return x * 2 if float(CONSTANT.sum()) == 7.0 else x + 1


@pytest.mark.parametrize("model", [OnFill(), OnLiteral(), OnConstant()], ids=["fill", "lifted data", "real constant"])
def test_every_source_of_known_values_answers_a_read(model):
    x = torch.empty(2, 4, device="meta")  # the input's own values are unknown
    graph = capture(model, (x,))
    assert graph.capture_mode == "fake"
    assert "aten.mul.Tensor" in names(graph) and "aten.add.Tensor" not in names(graph)


def test_an_in_place_op_on_a_known_constant_leaves_the_constant_as_it_was():
    def f(x):
        scratch = CONSTANT * 1
        scratch.add_(1.0)
        return x * 2 if float(scratch.sum()) == 9.0 else x + 1

    graph = capture(f, (torch.empty(2, device="meta"),))
    assert "aten.mul.Tensor" in names(graph)
    assert CONSTANT.tolist() == [3.0, 4.0]


def test_an_input_passed_twice_keeps_each_value_where_it_belongs():
    def f(x, labels, mask):
        return x * 2 if bool(labels.all()) else x + 1

    ids = torch.tensor([1, 2, 3])
    mask = torch.tensor([0, 0, 0])
    graph = capture(f, (ids,), {"labels": ids, "mask": mask})
    assert "aten.mul.Tensor" in names(graph) and "aten.add.Tensor" not in names(graph)


def test_a_view_of_a_tensor_written_with_unknown_values_is_forgotten():
    def f(x, mask, unknown):
        row = mask[0]
        mask.mul_(unknown)  # its new values are unknown, so are its views'
        return x * 2 if bool(row.all()) else x + 1

    with torch.device("meta"), Recipes():
        mask = torch.ones(2, 4, dtype=torch.bool)
    unknown = torch.empty(2, 4, dtype=torch.bool, device="meta")
    with pytest.raises(CaptureError, match="_local_scalar_dense"):
        capture(f, (torch.empty(4, device="meta"), mask, unknown))


def test_a_tensor_only_read_by_an_in_place_op_stays_known():
    def f(x, mask, buf):
        buf.add_(mask.float())  # writes buf, reads mask
        return x * 2 if bool(mask.all()) else x + 1

    with torch.device("meta"), Recipes():
        mask = torch.ones(4, dtype=torch.bool)
    graph = capture(f, (torch.empty(4, device="meta"), mask, torch.empty(4, device="meta")))
    assert "aten.mul.Tensor" in names(graph)


def test_random_ops_are_not_computed_and_leave_the_generator_alone():
    def f(x, mask):
        noise = torch.rand_like(mask.float())
        return x * 2 if bool((noise < 2).all()) else x + 1

    with torch.device("meta"), Recipes():
        mask = torch.ones(4, dtype=torch.bool)
    state = torch.random.get_rng_state()
    with pytest.raises(CaptureError, match="_local_scalar_dense"):
        capture(f, (torch.empty(4, device="meta"), mask))
    assert torch.equal(torch.random.get_rng_state(), state)


def test_a_data_dependent_op_with_several_outputs_gives_fake_tensors_on_the_device():
    def f(x, ids):
        values, counts = torch.unique(ids, return_counts=True)
        return x[: values.numel()] * counts.sum()

    ids = torch.tensor([1, 1, 2, 5])
    graph = capture(f, (torch.empty(8, device="meta"), ids))
    assert graph.capture_mode == "fake"
    unique = next(op for op in graph.ops if "unique" in op.name)
    assert [t.shape for t in unique.outputs][:1] == [(3,)]
    assert all(t.device == "cpu" for op in graph.ops for t in op.outputs)


# ---- the library guard ------------------------------------------------------------------------


def _fake_library(monkeypatch):
    """A stand-in for transformers: ``utils.import_utils.is_fake_tensor`` and an ``is_tracing`` that
    calls it, and a mask check that reads the mask's values only when it is not traced."""
    from torch._subclasses.fake_tensor import FakeTensor

    import_utils = types.ModuleType("transformers.utils.import_utils")
    import_utils.is_fake_tensor = lambda x: isinstance(x, FakeTensor)

    def is_tracing(tensor):
        return import_utils.is_fake_tensor(tensor)

    def mask_is_full(mask):  # the library's check
        return not is_tracing(mask) and bool(mask.all())

    import_utils.is_tracing = is_tracing
    import_utils.mask_is_full = mask_is_full
    utils = types.ModuleType("transformers.utils")
    utils.import_utils = import_utils
    monkeypatch.setitem(sys.modules, "transformers.utils", utils)
    monkeypatch.setitem(sys.modules, "transformers.utils.import_utils", import_utils)
    return import_utils


def test_a_library_skips_the_mask_a_real_run_skips_and_its_check_does_not_rule_out_graphs(monkeypatch):
    lib = _fake_library(monkeypatch)

    def f(x, mask):
        if lib.mask_is_full(mask):
            return x * 2  # the fast path of an all-ones mask
        return x.masked_fill(~mask, 0.0)

    with torch.device("meta"), Recipes():
        x, mask = torch.randn(4), torch.ones(4, dtype=torch.bool)
    graph = capture(f, (x, mask))
    assert "aten.mul.Tensor" in names(graph) and "aten.masked_fill.Scalar" not in names(graph)
    assert graph.library_checks and graph.library_check_ops and host_syncs(graph) == []
    assert not any("read" in w for w in graph.warnings)  # a library's check is not the model branching on data
    again = graph_from_dict(graph_to_dict(graph))
    assert again.library_check_ops == graph.library_check_ops and again.library_checks == graph.library_checks
    # without the guard's answer the capture takes the path fake tensors allow
    unknown = torch.empty(4, dtype=torch.bool, device="meta")
    graph = capture(f, (x, unknown))
    assert "aten.masked_fill.Scalar" in names(graph) and not graph.library_check_ops


def test_the_models_own_read_after_a_library_check_still_rules_out_graphs(monkeypatch):
    lib = _fake_library(monkeypatch)

    def f(x, mask):
        full = lib.mask_is_full(mask)
        scale = float(mask.sum())  # the model's own read: a host sync a CUDA graph cannot capture
        return x * scale if full else x

    with torch.device("meta"), Recipes():
        x, mask = torch.randn(4), torch.ones(4, dtype=torch.bool)
    graph = capture(f, (x, mask))
    syncs = host_syncs(graph)
    assert len(syncs) == 1 and "test_known_values.py" in syncs[0]
    assert len(graph.library_check_ops) == 1


def test_a_path_that_fails_with_known_values_is_captured_without_them(monkeypatch):
    lib = _fake_library(monkeypatch)

    def f(x, mask):
        if lib.mask_is_full(mask):
            raise RuntimeError("the fast path needs something the capture lacks")
        return x + 1

    with torch.device("meta"), Recipes():
        x, mask = torch.randn(4), torch.ones(4, dtype=torch.bool)
    graph = capture(f, (x, mask))
    assert names(graph) == ["aten.add.Tensor"]
    assert any("may differ from a real run" in w for w in graph.warnings)


class OnExpandedMask(nn.Module):
    """Longformer's pattern: a known 2-d mask expanded to a square one past MAX_ELEMENTS, then read."""

    def forward(self, x, mask):
        square = (mask[:, None, :] * mask[:, :, None]).float()  # 1 x 512 x 512: 262,144 elements
        return x * 2 if bool((square > 0).any()) else x + 1


def test_a_result_expanded_from_a_known_mask_keeps_its_values():
    from roofline.graph.values import MAX_DERIVED_ELEMENTS, MAX_ELEMENTS

    mask = torch.ones(1, 512, dtype=torch.long)
    assert MAX_ELEMENTS < 512 * 512 <= MAX_DERIVED_ELEMENTS
    graph = capture(OnExpandedMask(), (torch.empty(2, 4, device="meta"), mask))
    assert "aten.mul.Tensor" in names(graph) and "aten.add.Tensor" not in names(graph)
