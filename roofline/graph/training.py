"""One training step as a program: the forward, a loss, the backward pass as autograd runs it, and
the optimizer step as torch runs it.

``TrainStep`` says which step (optimizer, its implementation, the loss); ``StepRun`` runs it inside
a capture (``roofline.graph.capture.capture(..., train=)``) and marks every recorded op with its
phase: ``forward`` (the loss included), ``backward``, ``optimizer``. The same ``TrainStep`` builds
the real step that ``--measure --train`` times (``make_optimizer``, ``make_loss``), so what is
priced and what is timed are one program.

The optimizer's state is made before the recorded step (a first step on zero gradients, not
recorded): the step priced is a steady one, whose state exists, as every step but the first is.
Gradients start as None (``zero_grad(set_to_none=True)``, torch's default), so the backward pass
allocates them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import torch
import torch.nn.functional as F

from roofline.errors import CaptureError
from roofline.graph.structure import tensors_in

OPTIMIZERS = ("adamw", "adam", "sgd")
LOSSES = ("auto", "sum")
# how the optimizer updates its tensors: torch's default for the device, or one named
IMPLEMENTATIONS = ("default", "foreach", "fused", "for-loop")
PHASES = ("forward", "backward", "optimizer")


@dataclass(frozen=True)
class TrainStep:
    """Which training step to capture: ``optimizer`` (adamw, adam, sgd), its ``implementation``
    (``default``: what torch picks for the device; ``foreach``, ``fused`` or ``for-loop``), the
    ``loss`` (``auto`` or ``sum``, see ``make_loss``) or the model file's own ``loss_fn(output,
    *inputs)``."""

    optimizer: str = "adamw"
    implementation: str = "default"
    loss: str = "auto"
    loss_fn: Callable | None = None
    lr: float = 1e-3
    autocast: str | None = None  # "bfloat16" or "float16": the forward and loss under torch.autocast

    def __post_init__(self):
        if self.optimizer not in OPTIMIZERS:
            raise CaptureError(f"unknown optimizer '{self.optimizer}'; use one of {', '.join(OPTIMIZERS)}")
        if self.implementation not in IMPLEMENTATIONS:
            raise CaptureError(f"unknown optimizer implementation '{self.implementation}'; use one of {', '.join(IMPLEMENTATIONS)}")
        if self.loss not in LOSSES:
            raise CaptureError(f"unknown loss '{self.loss}'; use one of {', '.join(LOSSES)}, or define loss_fn(output, *inputs) in the model file")

    def for_device(self, kind: str) -> "TrainStep":
        """This step with ``default`` resolved to what torch runs on ``kind`` ('cuda' or 'cpu')."""
        if self.implementation != "default":
            return self
        return replace(self, implementation=default_implementation(kind))


def default_implementation(kind: str) -> str:
    """What torch's optimizers run when not told (``torch.optim.optimizer._default_to_fused_or_foreach``):
    the foreach kernels for tensors on a GPU, one tensor at a time on the CPU; fused only when asked."""
    return "foreach" if kind == "cuda" else "for-loop"


def make_optimizer(params: list[torch.Tensor], step: TrainStep) -> torch.optim.Optimizer:
    """The optimizer of ``step`` over ``params``, its implementation named explicitly (torch would pick
    the single-tensor path for fake tensors, which are not its plain tensor types)."""
    impl = step.implementation
    if impl == "default":
        impl = default_implementation(params[0].device.type if params else "cpu")
    flags = {"foreach": impl == "foreach"}
    if impl == "fused":
        flags = {"fused": True}
    cls = {"adamw": torch.optim.AdamW, "adam": torch.optim.Adam, "sgd": torch.optim.SGD}[step.optimizer]
    extra = {"momentum": 0.9} if step.optimizer == "sgd" else {}
    try:
        return cls(params, lr=step.lr, **extra, **flags)
    except (RuntimeError, ValueError) as e:
        raise CaptureError(f"torch cannot build {step.optimizer} ({impl}) here: {str(e).splitlines()[0]}; choose another implementation") from None


def make_loss(output: Any, args: tuple, kwargs: dict, step: TrainStep) -> tuple[Callable[[Any], torch.Tensor], str]:
    """``(loss(output) -> scalar tensor, what it is in words)``, with any targets made now, once.

    The model file's ``loss_fn(output, *inputs)`` when it has one; else, with ``loss='auto'``, the
    loss the output carries (transformers' ``output.loss`` when the inputs hold labels), or
    cross-entropy over the last dimension of a floating output of two or more dimensions (logits,
    against class 0); else, and with ``loss='sum'``, the sum of the floating outputs."""
    if step.loss_fn is not None:
        user = step.loss_fn
        return (lambda out: user(out, *args, **kwargs)), "the model file's loss_fn(output, *inputs)"
    tensors = [t for t in tensors_in(output) if t.is_floating_point() and t.requires_grad]
    if not tensors:
        raise CaptureError(
            "the model's output has no floating tensor that depends on its parameters, so there is nothing to train; "
            "define loss_fn(output, *inputs) in the model file"
        )
    if step.loss == "auto":
        own = _own_loss(output)
        if own is not None:
            return _own_loss, "the loss the model returns (output.loss)"
        first = tensors[0]
        if first.ndim >= 2 and first.shape[-1] >= 2:
            classes = first.shape[-1]
            targets = torch.zeros(first.numel() // classes, dtype=torch.long, device=first.device)
            index = next(i for i, t in enumerate(tensors_in(output)) if t is first)

            def cross_entropy(out):
                logits = list(tensors_in(out))[index]
                return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets)

            return cross_entropy, f"cross-entropy over the output's last dimension ({classes} classes)"

    def total(out):
        parts = [t.sum() for t in tensors_in(out) if t.is_floating_point() and t.requires_grad]
        return parts[0] if len(parts) == 1 else torch.stack([p.float() for p in parts]).sum()

    return total, "the sum of the output" if len(tensors) == 1 else f"the sum of the {len(tensors)} floating outputs"


def _own_loss(output: Any) -> torch.Tensor | None:
    loss = output.get("loss") if isinstance(output, dict) else getattr(output, "loss", None)
    return loss if isinstance(loss, torch.Tensor) and loss.ndim == 0 and loss.requires_grad else None


@dataclass
class StepInfo:
    """What a captured training step holds besides its ops (``CapturedGraph.training``)."""

    optimizer: str
    implementation: str
    loss: str  # what the loss is, in words
    parameters: int  # trainable parameter tensors
    parameter_bytes: int  # their bytes
    # (op, output) of each value that ends the step as a parameter's ``.grad``
    gradients: list[tuple[int, int]] = field(default_factory=list)
    gradient_bytes: int = 0
    optimizer_state_bytes: int = 0  # state on the parameters' device (moments, momentum buffers)
    optimizer_host_state_bytes: int = 0  # state torch keeps on the CPU (the step counts, unless fused)
    parameter_shapes: list[tuple[tuple[int, ...], torch.dtype]] = field(default_factory=list)
    autograd_nodes: int = 0  # nodes the backward pass runs (each costs the engine's host time)


def is_host_step(key: str, step: TrainStep) -> bool:
    """Whether an optimizer's state entry lives on the CPU whatever the parameters' device: the step
    count of Adam and AdamW, a CPU scalar unless the optimizer is fused (or capturable)."""
    return key == "step" and step.implementation != "fused"


class StepRun:
    """A training step run inside a capture: build the optimizer and its state before the forward,
    then the loss, backward and optimizer step after it, each op marked with its phase.

    ``recorder`` is the capture's recording mode: it has ``phase``, ``name_value(tensor, name)``,
    ``values`` (tensor -> (name, producer op)), ``ops``, and the ``paused()`` context."""

    def __init__(self, step: TrainStep, params: list[torch.Tensor], recorder):
        if not params:
            raise CaptureError("the model has no parameter that requires grad, so there is no training step; check requires_grad, or analyze it without --train")
        self.step, self.params, self.recorder = step, params, recorder
        with recorder.paused():
            self.optimizer = make_optimizer(params, step)
            for p in params:
                p.grad = torch.zeros_like(p)
            self.optimizer.step()  # makes the state a steady step has
            self.optimizer.zero_grad(set_to_none=True)
        self.device_state = self.host_state = 0
        for i, p in enumerate(params):
            for key, value in self.optimizer.state[p].items():
                if isinstance(value, torch.Tensor):
                    recorder.name_value(value, f"optim.{i}.{key}")
                    nbytes = value.numel() * value.element_size()
                    if is_host_step(key, step):
                        recorder.host_scalars.add(f"optim.{i}.{key}")
                        self.host_state += nbytes  # a CPU scalar beside each parameter
                    else:
                        self.device_state += nbytes
        self.loss_words = ""
        self.autograd_nodes = 0

    def autocast(self):
        """The forward's and the loss's context: ``torch.autocast`` when the step asks for it."""
        return step_autocast(self.step, self.params[0].device.type)

    def finish(self, output: Any, args: tuple, kwargs: dict) -> None:
        """Loss and backward pass from the forward's ``output``, then the optimizer step."""
        rec = self.recorder
        with rec.paused():  # targets come with the data, as the inputs do
            loss_of, self.loss_words = make_loss(output, args, kwargs, self.step)
        with self.autocast(), rec.in_module("loss"):
            loss = loss_of(output)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1 or not loss.requires_grad:
            raise CaptureError("the loss is not a scalar tensor that depends on the parameters; make loss_fn(output, *inputs) return one")
        self.autograd_nodes = _nodes_behind(loss)
        rec.phase = "backward"
        loss.backward()
        rec.phase = "optimizer"
        with torch.no_grad():
            self.optimizer.step()
        rec.phase = "forward"

    def info(self) -> StepInfo:  # noqa: D102 - what the step held, once it ran
        rec = self.recorder
        gradients = []
        for p in self.params:
            found = rec.values.get(p.grad) if p.grad is not None else None
            if found is not None and found[1] >= 0:
                name, producer = found
                gradients.append((producer, int(name.rsplit(".", 1)[1])))
        return StepInfo(
            optimizer=self.step.optimizer, implementation=self.step.implementation, loss=self.loss_words,
            parameters=len(self.params), parameter_bytes=sum(p.numel() * p.element_size() for p in self.params),
            parameter_shapes=[(tuple(p.shape), p.dtype) for p in self.params],
            gradients=gradients, gradient_bytes=sum(p.numel() * p.element_size() for p in self.params if p.grad is not None),
            optimizer_state_bytes=self.device_state, optimizer_host_state_bytes=self.host_state,
            autograd_nodes=self.autograd_nodes,
        )


def _nodes_behind(loss: torch.Tensor) -> int:
    """Autograd nodes reachable from the loss: what ``loss.backward()`` runs."""
    seen, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        stack.extend(n for n, _ in node.next_functions)
    return len(seen)


def step_autocast(step: TrainStep, device_type: str):
    """``torch.autocast`` for the step's forward and loss, or nothing."""
    if step.autocast is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=getattr(torch, step.autocast))


class ParameterSet(torch.nn.Module):
    """Parameters of given shapes and a forward that only sums them: its training step is the
    optimizer step over those parameters, which ``optimizer_alone`` prices in another implementation."""

    def __init__(self, shapes: list[tuple[tuple[int, ...], torch.dtype]]):
        super().__init__()
        self.tensors = torch.nn.ParameterList(torch.nn.Parameter(torch.empty(s, dtype=d, device="meta")) for s, d in shapes)

    def forward(self):
        return torch.stack([p.sum().float() for p in self.tensors]).sum()


@contextlib.contextmanager
def training_mode(model) -> Any:
    """``model.train()`` for the step, each module's flag restored afterwards."""
    if not isinstance(model, torch.nn.Module):
        yield
        return
    flags = [(m, m.training) for m in model.modules()]
    model.train()
    try:
        yield
    finally:
        for m, training in flags:
            m.training = training
