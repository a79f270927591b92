"""torch.compile host costs: calibrated as ratios to eager side by side, stored on the eager scale,
moved with it when the host runs at another speed, and priced per launched kernel."""

import pytest
import torch

from calibrate.compiled import compiled_ratios
from roofline.advice.compiled import compiled_total_s
from roofline.costs import cost_of
from roofline.graph.capture import capture
from roofline.model.device import DeviceModel
from roofline.model.host import eager_chain_kernel_s, scaled_overheads
from roofline.model.timeline import price_kernels
from roofline.profiles import load_profile_file
from roofline.schema.profile import Stat
from tests.conftest import REPO

PROFILE = REPO / "tests" / "fixtures" / "h100_profile.json"
US = 1e-6


@pytest.fixture()
def h100():
    return load_profile_file(PROFILE)


def test_ratios_cancel_a_host_that_slows_down_between_rounds():
    # Round 1: eager 10 us per kernel, compiled 12 us per kernel and a 50 us call. Round 2: the whole
    # host 1.5x slower. Chains of 2 and 8 layers: eager launches 4 and 16 kernels, the compiled
    # chains 3 and 12 (distinct counts, so a mix-up of the two modes' counts shows).
    # The 8-layer chain with 8 weights: 7 more graph inputs at 2 us each compiled, and eager 0.1 us
    # dearer per argument, which is taken off (the kernels are the same).
    kernels = {("compiled", 2): 3, ("compiled", 8): 12, ("eager", 2): 4, ("eager", 8): 16, ("compiled", "8w"): 12, ("eager", "8w"): 16}

    def row(slow):
        return {
            ("compiled", 2): slow * (50 + 3 * 12) * US, ("compiled", 8): slow * (50 + 12 * 12) * US,
            ("eager", 2): slow * 4 * 10 * US, ("eager", 8): slow * 16 * 10 * US,
            ("compiled", "8w"): slow * (50 + 12 * 12 + 7 * 2.1) * US, ("eager", "8w"): slow * (16 * 10 + 7 * 0.1) * US,
        }

    call, kernel, per_input = compiled_ratios([row(1.0), row(1.5)], kernels)
    assert call == pytest.approx([5.0, 5.0]) and kernel == pytest.approx([1.2, 1.2])
    assert per_input == pytest.approx([0.2, 0.2])  # 2 us over the 10 us eager kernel
    # rounds from before the weights chain: no input ratio
    old = [{k: v for k, v in row(1.0).items() if k[1] != "8w"}]
    assert compiled_ratios(old, kernels)[2] == []


def test_the_call_cost_is_measured_on_a_chain_of_as_many_inputs_as_prediction_assumes():
    import inspect

    from calibrate.compiled import compiled_chain
    from roofline.advice.compiled import COMPILED_CHAIN_INPUTS

    assert len(inspect.signature(compiled_chain(2)).parameters) == COMPILED_CHAIN_INPUTS


def test_each_graph_input_beyond_the_chains_two_adds_its_cost(h100):
    # seed 003's stack has 8 weights, 8 biases and the input: 15 inputs beyond the calibration
    # chain's (x, w), each priced at compiled_input_s; a profile without it adds nothing.
    from roofline.advice.compiled import graph_inputs

    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(128, 128), torch.nn.ReLU(inplace=True)]
    model = torch.nn.Sequential(*layers).eval()
    g = capture(model, (torch.randn(1, 128),))
    assert graph_inputs(g) == 17
    costs = [cost_of(op)[0] for op in g.ops]
    ov = h100.gpu.measurements.overheads
    without = h100.model_copy(deep=True)
    without.gpu.measurements.overheads = ov.model_copy(update=dict(compiled_input_s=None))
    per_input = Stat(median_s=1.5 * US, iqr_s=0.0, samples=7)
    with_inputs = h100.model_copy(deep=True)
    with_inputs.gpu.measurements.overheads = ov.model_copy(update=dict(compiled_input_s=per_input))
    dev_without, dev_with = DeviceModel(without.gpu, "cuda"), DeviceModel(with_inputs.gpu, "cuda")
    base = compiled_total_s(g, costs, dev_without, price_kernels(g.ops, costs, dev_without))
    assert compiled_total_s(g, costs, dev_with, price_kernels(g.ops, costs, dev_with)) == pytest.approx(base + 15 * 1.5 * US)


def test_eager_chain_kernel_is_priced_as_the_eager_chain_itself(h100):
    # mean of addmm and relu dispatch, at the interleaving of 2 different ops: exactly what the
    # model of time charges per op for a chain alternating mm and relu
    ov = h100.gpu.measurements.overheads
    dev = DeviceModel(h100.gpu, "cuda")
    addmm, relu = ov.dispatch_by_op_s["addmm"].median_s, ov.dispatch_by_op_s["relu"].median_s
    assert eager_chain_kernel_s(ov) == pytest.approx((addmm + relu) / 2 * dev.interleave_for(2))
    assert eager_chain_kernel_s(ov) * dev.program_factor == pytest.approx((dev.dispatch_s("addmm", 2) + dev.dispatch_s("relu", 2)) / 2)


def test_a_slower_host_moves_compiled_costs_with_the_eager_scale(h100):
    # a host 2x slower: every dispatch doubles, and so do the compiled costs (stored on the eager scale)
    ov = h100.gpu.measurements.overheads.model_copy(update=dict(compiled_input_s=Stat(median_s=1.5 * US, iqr_s=0.0, samples=7)))
    slower = scaled_overheads(ov, 2.0)
    assert eager_chain_kernel_s(slower) == pytest.approx(2 * eager_chain_kernel_s(ov))
    for name in ("compiled_call_s", "compiled_kernel_s", "compiled_input_s"):
        assert getattr(slower, name).median_s == pytest.approx(2 * getattr(ov, name).median_s)
    assert slower.kernel_min_s == ov.kernel_min_s and slower.graph_kernel_s == ov.graph_kernel_s  # device time stays


def test_compiled_forward_is_the_call_plus_each_launched_kernel(h100, monkeypatch):
    # seed 003's 8 x (Linear + ReLU) at batch 1: Inductor keeps each GEMM a cuBLAS call and emits one
    # Triton kernel for bias + ReLU: 16 kernels on any torch (eager before 2.10 launches 24, a bias
    # copy per Linear), each at the compiled cost per kernel, after one call cost; views launch nothing.
    from roofline.costs import matmul

    layers = []
    for _ in range(8):
        layers += [torch.nn.Linear(128, 128), torch.nn.ReLU(inplace=True)]
    model = torch.nn.Sequential(*layers).eval()
    dev = DeviceModel(h100.gpu, "cuda")
    ov = h100.gpu.measurements.overheads
    host = ov.compiled_call_s.median_s + 16 * ov.compiled_kernel_s.median_s
    for new_torch, eager_kernels in ((True, 16), (False, 24)):
        monkeypatch.setattr(matmul, "BIAS_EPILOGUE_TAKES_ONE_ROW", new_torch)
        g = capture(model, (torch.randn(1, 128),))
        costs = [cost_of(op)[0] for op in g.ops]
        assert sum(c.kernels for c in costs) == eager_kernels
        predicted = compiled_total_s(g, costs, dev, price_kernels(g.ops, costs, dev))
        # host-bound: the device work of 16 tiny kernels is far below the host's issue time
        assert host <= predicted <= host + ov.synchronize_s.median_s + 50 * US
