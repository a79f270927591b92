"""A causal LM's decode loop timed on the device: what ``DecodeReport`` predicts.

The loop is the hand-written one serving code runs: the prompt through the model, then
``new_tokens`` steps, each feeding the returned ``past_key_values`` back with one token per sequence
(the same inputs ``roofline.graph.decode.step_inputs`` captured: the token's value does not change
the work), the host never waiting for the device until one synchronize at the end. (``generate``
would add its sampling and a host sync per step for its stopping check.) Timed by the shared
protocol beside the host-speed index, the loop and the prefill alone each in their own rounds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import statistics

import numpy as np

from roofline.graph.decode import accepts_use_cache, find_cache, step_inputs
from roofline.graph.structure import map_tensors
from roofline.measure.host_speed import HostSpeed, index_call, index_slot
from roofline.measure.run import on_device
from roofline.model.host import calibrated_index_s
from roofline.schema.profile import Overheads
from roofline.timing import Slot, Timing, summarize, sync, time_rounds

ROUNDS = 5


@dataclass
class DecodeMeasurement:
    prefill: Timing
    loop: Timing  # prefill and every step, synchronized once
    new_tokens: int
    host_speed: HostSpeed | None

    @property
    def per_token_s(self) -> float:
        return max(self.loop.median_s - self.prefill.median_s, 0.0) / self.new_tokens


def measure_decode(model, args: tuple, kwargs: dict, device: str, new_tokens: int, overheads: Overheads | None, *, rounds: int = ROUNDS) -> DecodeMeasurement:
    """Time the prefill alone and the whole loop (prefill + ``new_tokens`` steps) on ``device``, in
    rounds alternating with the host-speed index when ``overheads`` (the profile's) are given."""
    model, args, kwargs = on_device(model, args, kwargs, device)
    accepts = accepts_use_cache(model)
    if accepts:
        kwargs = {**kwargs, "use_cache": True}
    steps = [map_tensors(step_inputs(args, kwargs, i, accepts), lambda t: t.to(device)) for i in range(new_tokens)]

    def prefill():
        model(*args, **kwargs)
        sync(device)

    def loop():
        out = model(*args, **kwargs)
        for a, k in steps:
            out = model(*a, **k, past_key_values=find_cache(out))
        sync(device)

    slots = {"prefill": Slot(prefill, samples=3), "loop": Slot(loop, samples=3)}
    if overheads is not None:
        mix = index_call(device, overheads.dispatch_by_op_s)
        slots = {"index": index_slot(mix), **slots}
    with torch.no_grad():
        got = time_rounds(slots, rounds=rounds, warmup_rounds=1, device=device)
    speed = None
    if overheads is not None:
        index_now = statistics.median(np.concatenate(got["index"]).tolist())
        speed = HostSpeed(index_now_s=index_now, index_calibrated_s=calibrated_index_s(overheads), blocks=len(got["loop"]))
    return DecodeMeasurement(
        prefill=summarize(np.concatenate(got["prefill"]), "prefill"), loop=summarize(np.concatenate(got["loop"]), "decode loop"),
        new_tokens=new_tokens, host_speed=speed,
    )
