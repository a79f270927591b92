"""Optimizer steps: the foreach ops and the fused optimizers, on the ops torch really runs."""

import pytest
import torch

from roofline.costs import cost_of
from roofline.costs.optimizer import CHUNK_ELEMENTS, launches
from tests.opcapture import capture_with_grad, meta, op_of

aten = torch.ops.aten
F32 = 4


def step_ops(optimizer_cls, **flags):
    """The ops of one optimizer step (the second: its state exists) over two parameters of 12 and 5 elements."""
    params = [torch.randn(3, 4, requires_grad=True), torch.randn(5, requires_grad=True)]
    opt = optimizer_cls(params, lr=0.1, **flags)
    for p in params:
        p.grad = torch.randn_like(p)
    opt.step()
    return capture_with_grad(opt.step)


def test_foreach_adamw_step_is_priced():
    ops = [o for o in step_ops(torch.optim.AdamW, foreach=True) if o.packet.startswith("aten._foreach")]
    assert ops
    for o in ops:
        c, ok = cost_of(o)
        assert ok, o.name
    lerp = next(o for o in ops if o.packet == "aten._foreach_lerp_")
    c, _ = cost_of(lerp)
    # exp_avg.lerp_(grad, 1 - beta1): 3 FLOPs per element over 17 elements; reads both lists, writes
    # exp_avg; one launch for two small tensors
    assert (c.flops, c.bytes_read, c.bytes_written, c.kernels) == (3 * 17, 2 * 17 * F32, 17 * F32, 1)


def test_foreach_sqrt_allocates():
    xs = [meta(3, 4), meta(5)]
    c, ok = cost_of(op_of(aten._foreach_sqrt.default, xs, outputs=xs))
    assert ok and (c.flops, c.bytes_read, c.bytes_written, c.category) == (17, 17 * F32, 17 * F32, "transcendental")


@pytest.mark.parametrize("cls, per_element", [(torch.optim.AdamW, 13 + 1), (torch.optim.Adam, 13)])
def test_fused_adam(cls, per_element):
    # AdamW's default weight decay (0.01) costs 1 FLOP per element; Adam's default is 0
    ops = step_ops(cls, fused=True)
    op = next(o for o in ops if o.packet.startswith("aten._fused_adam"))
    c, ok = cost_of(op)
    assert ok and c.flops == per_element * 17 and c.kernels == 1
    # reads params, grads and both moments; writes params and both moments (the schema marks
    # grads as written too, for the grad scaler's unscale)
    assert c.bytes_read >= 4 * 17 * F32 and c.bytes_written >= 3 * 17 * F32


def test_fused_sgd_with_momentum():
    ops = step_ops(torch.optim.SGD, fused=True, momentum=0.9)
    op = next(o for o in ops if o.packet == "aten._fused_sgd_")
    c, ok = cost_of(op)
    assert ok and c.flops == (2 + 3) * 17


def test_launches_follow_multi_tensor_apply():
    assert launches([10, 20], 4) == 1
    assert launches([CHUNK_ELEMENTS * 321], 1) == 2  # 320 chunks per launch
    assert launches([1] * 111, 1) == 2  # 110 tensors per launch at depth 1
    assert launches([1] * 37, 4) == 2  # 36 at depth 4
    assert launches([CHUNK_ELEMENTS * 3] * 110, 1) == 2  # 330 chunks: a tensor cut across two launches
    assert launches([], 1) == 0


def test_launches_tensor_limit_by_depth():
    # multi_tensor_apply's tensors per launch: 110, 64, 48, 36, 30 for 1..5 lists; deeper lists keep 30
    assert launches([1] * 64, 2) == 1 and launches([1] * 65, 2) == 2
    assert launches([1] * 48, 3) == 1 and launches([1] * 49, 3) == 2
    assert launches([1] * 30, 5) == 1 and launches([1] * 31, 5) == 2
    assert launches([1] * 31, 6) == 2


def test_launches_chunks_and_carried_tensors():
    # 65536 elements a chunk, 320 chunks a launch: 65536 * 320 elements fill one launch exactly, one more
    # element is a 321st chunk and a second launch
    assert launches([65536 * 320], 1) == 1
    assert launches([65536 * 320 + 1], 1) == 2
    # empty tensors are skipped: 200 of them and one element are one launch
    assert launches([0] * 200 + [1], 1) == 1
    # 220 one-element tensors at depth 1: two full launches of 110
    assert launches([1] * 220, 1) == 2
    # a tensor cut by the chunk limit carries on as the next launch's first tensor: 1 + 109 = 110 tensors
    # there, so its last chunk and 109 small tensors are one launch (2 in all)
    assert launches([65536 * 320 + 1] + [1] * 109, 1) == 2


def test_foreach_out_of_place_output_list_counts_in_the_depth():
    # _foreach_add.List over 49 one-element tensors: 49 FLOPs; out of place it walks 3 lists (two inputs, the
    # outputs): 48 tensors a launch, so 2 launches; in place (add_) 2 lists: 64 a launch, 1 launch
    from tests.opcapture import meta, op_of

    ones = [meta(1) for _ in range(49)]
    c, ok = cost_of(op_of(torch.ops.aten._foreach_add.List, ones, ones, outputs=ones))
    assert ok and (c.flops, c.kernels) == (49, 2)
    c, ok = cost_of(op_of(torch.ops.aten._foreach_add_.List, ones, ones))
    assert ok and (c.flops, c.kernels) == (49, 1)


def test_multi_tensor_kernels_are_cut_into_their_blocks_chunks():
    """multi_tensor_apply gives each chunk of up to 65536 elements a block and launches at 320 blocks
    or a full tensor list: the chunks of each kernel, their count the launches."""
    from roofline.costs.optimizer import CHUNK_ELEMENTS, kernel_chunks, launches

    kernels = kernel_chunks([CHUNK_ELEMENTS * 2 + 10, 100], 2)
    assert kernels == [[CHUNK_ELEMENTS, CHUNK_ELEMENTS, 10, 100]]
    sizes = [1024] * 1000
    assert len(kernel_chunks(sizes, 2)) == launches(sizes, 2) == 16  # 64 tensors a launch at two lists
    assert [len(k) for k in kernel_chunks([1 << 24] * 16, 1)][:2] == [320, 320]
    # a full block count cuts a tensor, which carries on into the next kernel
    cut = kernel_chunks([CHUNK_ELEMENTS * 330], 1)
    assert [len(k) for k in cut] == [320, 10] and sum(map(sum, cut)) == CHUNK_ELEMENTS * 330


def test_foreach_ops_price_on_the_profiles_multi_tensor_kernels():
    """The recorded H100 foreach ops (benchmarks/results/h100_foreach.json: an AdamW step's six
    ops over four torchvision models' parameters and lists of equal tensors), those over lists of
    other sizes than calibration times: within 20% in the median on the shipped profile's
    multi-tensor rates, 25% under as one streaming op each."""
    import statistics
    from pathlib import Path

    from benchmarks.foreach_check import held_out, predicted_s
    from benchmarks.sweep_checks import sweep_points
    from roofline.model.device import DeviceModel
    from roofline.profiles import load_profile_file

    repo = Path(__file__).parent.parent
    profile = load_profile_file(repo / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    points = [p for p in sweep_points(repo / "benchmarks" / "results" / "h100_foreach.json", "foreach") if held_out(p)]
    assert len(points) == 36 and profile.gpu.measurements.foreach is not None

    def median_error() -> float:
        dev = DeviceModel(profile.gpu, "cuda")
        return statistics.median(abs(predicted_s(dev, p) / p["median_s"] - 1) for p in points)

    assert median_error() < 0.2
    assert DeviceModel(profile.part("cpu"), "cpu").foreach is None  # the rates are the GPU's kernels'
    profile.gpu.measurements.foreach = None
    assert median_error() > 0.24
