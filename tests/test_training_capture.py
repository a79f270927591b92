"""Capturing one training step: phases, where backward ops come from, gradients, optimizer state."""

import pytest
import torch
from torch import nn

from roofline.errors import CaptureError
from roofline.graph.capture import capture
from roofline.graph.training import TrainStep, default_implementation


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def step_graph(model=None, x=None, **step):
    model = model or Block()
    x = torch.randn(4, 16) if x is None else x
    return capture(model, (x,), train=TrainStep(**step))


def test_phases_in_order():
    g = step_graph(implementation="foreach")
    phases = [op.phase for op in g.ops]
    assert set(phases) == {"forward", "backward", "optimizer"}
    # forward, then backward, then the optimizer: never back
    order = {"forward": 0, "backward": 1, "optimizer": 2}
    assert all(order[a] <= order[b] for a, b in zip(phases, phases[1:]))
    assert any(op.packet == "aten._foreach_lerp_" for op in g.ops if op.phase == "optimizer")


def test_backward_ops_know_their_forward_module():
    g = step_graph(implementation="foreach")
    mms = [op for op in g.ops if op.phase == "backward" and op.packet == "aten.mm"]
    # fc2: input and weight gradients; fc1: the weight's only (the input does not require grad)
    assert sorted(op.grad_of for op in mms) == ["fc1", "fc2", "fc2"]
    assert all(op.module == "" for op in g.ops if op.phase == "backward")  # no module call in backward
    assert all(op.source and op.source.startswith("test_training_capture.py") for op in mms)


def test_loss_is_cross_entropy_in_its_own_module():
    g = step_graph(implementation="foreach")
    assert "cross-entropy" in g.training.loss
    assert {op.packet for op in g.ops if op.module == "loss"} >= {"aten._log_softmax", "aten.nll_loss_forward"}


def test_sum_loss_and_user_loss():
    assert step_graph(loss="sum").training.loss == "the sum of the output"
    g = step_graph(loss_fn=lambda out, x: (out ** 2).mean())
    assert g.training.loss == "the model file's loss_fn(output, *inputs)"
    assert any(op.packet == "aten.pow" for op in g.ops if op.module == "loss")


def test_gradients_and_optimizer_state():
    g = step_graph(implementation="foreach")
    info = g.training
    n_params = 16 * 32 + 32 + 32 * 10 + 10
    assert info.parameters == 4 and info.parameter_bytes == 4 * n_params == info.gradient_bytes
    assert len(info.gradients) == 4
    assert all(g.ops[i].phase == "backward" for i, _ in info.gradients)
    assert info.optimizer_state_bytes == 2 * 4 * n_params  # AdamW's two moments
    assert info.optimizer_host_state_bytes == 4 * 4  # a float32 step count per parameter, on the CPU


def test_step_counts_are_host_scalars():
    g = step_graph(implementation="for-loop")
    items = [op for op in g.ops if op.packet == "aten._local_scalar_dense"]
    assert items and all(op.host_scalar for op in items)
    assert not any(op.host_scalar for op in g.ops if op.phase != "optimizer")
    from roofline.graph.ops import reads_to_host

    assert not any(reads_to_host(op) for op in g.ops)  # a step count's .item() is not a device sync


def test_sgd_and_fused():
    g = step_graph(optimizer="sgd", implementation="fused")
    assert [op.packet for op in g.ops if op.phase == "optimizer"] == ["aten._fused_sgd_"]
    assert g.training.optimizer_state_bytes == 4 * (16 * 32 + 32 + 32 * 10 + 10)  # the momentum buffers


def test_default_implementation_is_torchs():
    assert default_implementation("cuda") == "foreach" and default_implementation("cpu") == "for-loop"
    assert TrainStep().for_device("cuda").implementation == "foreach"


def test_model_weights_untouched_and_mode_restored():
    model = Block().eval()
    before = model.fc1.weight.detach().clone()
    capture(model, (torch.randn(4, 16),), train=TrainStep(), real=True)
    assert torch.equal(model.fc1.weight, before) and not model.training


def test_frozen_model_is_one_line():
    model = Block().requires_grad_(False)
    with pytest.raises(CaptureError, match="no parameter that requires grad"):
        step_graph(model)


def test_bad_choices_are_one_line():
    with pytest.raises(CaptureError, match="unknown optimizer 'lamb'"):
        TrainStep(optimizer="lamb")
    with pytest.raises(CaptureError, match="unknown loss"):
        TrainStep(loss="l1")


def test_activation_checkpointing_is_priced_as_run():
    from torch.utils.checkpoint import checkpoint

    class Checkpointed(nn.Module):
        def __init__(self, on: bool):
            super().__init__()
            self.on, self.block, self.head = on, nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16)), nn.Linear(16, 10)

        def forward(self, x):
            return self.head(checkpoint(self.block, x, use_reentrant=False) if self.on else self.block(x))

    plain, ckpt = (step_graph(Checkpointed(on), implementation="foreach") for on in (False, True))
    again = [op.packet for op in ckpt.ops if op.phase == "backward" and op.packet in ("aten.addmm", "aten.gelu")]
    # the block's forward runs again inside backward, up to the last value its backward needs
    assert again == ["aten.addmm", "aten.gelu"]
    assert not any(op.packet in ("aten.addmm", "aten.gelu") for op in plain.ops if op.phase == "backward")
