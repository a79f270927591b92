"""CPU ops priced at their inputs' reuse distances (roofline.model.reuse)."""

import pytest
import torch

import roofline.model.timeline as timeline
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.model.device import DeviceModel
from roofline.model.reuse import reuse_reach
from roofline.profiles import load_profile_file
from tests.conftest import REPO

N_ELEMENTS = 1 << 20  # 4 MiB of float32: within this host's caches
BIG_ELEMENTS = 1 << 26  # 256 MiB: beyond them


def _cpu() -> DeviceModel:
    return DeviceModel(load_profile_file(REPO / "benchmarks" / "results" / "cpu_2core_zoo_profile.json").host, "cpu")


def _last_kernel_s(fn, *inputs) -> float:
    graph = capture(fn, inputs)
    costs = [cost_of(op)[0] for op in graph.ops]
    return timeline.price_kernels(graph.ops, costs, _cpu())[-1][0]


def _near(x, big):
    y = x.neg()
    return y.neg()  # y read right after it was made


def _far(x, big):
    y = x.neg()
    big.neg()  # 512 MiB touched in between
    return y.neg()


def _inputs():
    return torch.empty(N_ELEMENTS, device="meta"), torch.empty(BIG_ELEMENTS, device="meta")


def test_an_input_read_after_a_large_working_set_is_priced_slower():
    near, far = _last_kernel_s(_near, *_inputs()), _last_kernel_s(_far, *_inputs())
    assert far > 3 * near


def test_without_reuse_distances_both_are_priced_alike(monkeypatch):
    monkeypatch.setattr(timeline, "CPU_REUSE", False)
    assert _last_kernel_s(_far, *_inputs()) == pytest.approx(_last_kernel_s(_near, *_inputs()))


def test_in_place_results_and_views_are_the_storage_they_alias():
    def fn(x, big):
        x.mul_(2.0)  # in place: x's storage, touched now
        v = x.view(-1)  # a view of it
        big.neg()
        return v.neg()

    graph = capture(fn, _inputs())
    reach = reuse_reach(graph.ops)
    (nbytes, far), = reach[-1]
    assert nbytes == 4 * N_ELEMENTS
    # the big tensor, its result, and x itself lie between (x touched by mul_, not first by neg)
    assert far == 4 * N_ELEMENTS + 2 * 4 * BIG_ELEMENTS


def test_the_program_repeats_so_a_parameter_was_touched_by_the_previous_run():
    def fn(x, big):
        return x.neg()

    reach = reuse_reach(capture(fn, _inputs()).ops)
    (nbytes, far), = reach[0]
    assert far == 2 * nbytes  # x and last run's result


def test_a_fused_chain_on_the_cpu_still_reads_its_far_input_from_far():
    """Fusion advice prices the fused kernel at its members' reuse distances, as the unfused ops were
    priced: x, last touched before a 128 MiB op, costs the fused kernel a far read too, so the gain is
    less than the chain's kernels minus a kernel priced as if x were hot."""
    import roofline

    class Chain(torch.nn.Module):
        def forward(self, x, big):
            a = x * 2.0
            y = torch.sin(big)
            return torch.relu(a + 1.0) * 3.0, y

    profile = "benchmarks/results/cpu_2core_zoo_profile.json"
    r = roofline.analyze(Chain().eval(), (torch.randn(1 << 20), torch.randn(32 << 20)), profile=profile, device="cpu", batch_sweep=False)
    (group,) = r.fusion
    members_s = sum(r.ops[i].kernel_s for i in group.ops)
    first_s = r.ops[group.ops[0]].kernel_s  # x * 2.0: x read from far, a written
    assert group.predicted_gain_s <= members_s - 0.4 * first_s
