"""LLM decode: a prefill and N decode steps with a key-value cache, predicted per token and in total.

Serving time lives in the decode loop: one forward per token, each reading every weight and the
whole cache to produce one token per sequence, so steps are overhead- or memory-bound where the
prefill is compute-bound. The loop is the one people write (and ``--measure`` times): the prompt
through the model, then each step feeding the returned ``past_key_values`` back with one token, the
host issuing step after step without waiting for the device. Each step's graph comes from
``roofline.graph.decode`` (captured three times, fitted over the cache length); each is priced on
the profile like any forward, and the steps are chained on the timeline's max-plus maps
(``roofline.model.timeline.Schedule.run_step``), so a step whose kernels outlast its host issue lets
the host run ahead into the next one, as it does on the device.
"""

from __future__ import annotations

import math
from typing import Any

from roofline.graph.decode import DecodeGraphs, decode_graphs
from roofline.model.device import DeviceModel
from roofline.model.host import scaled_overheads
from roofline.model.timeline import Schedule, Step, apply_step, price_kernels
from roofline.pipeline import Analysis, Options, capture_device_for, resolve_profile
from roofline.schema.profile import DeviceProfile
from roofline.schema.report import DecodeReport

PRICED_STEPS_MAX = 64  # beyond this many steps, every k-th is priced and the others interpolated


class DecodeAnalysis:
    """A causal LM's prefill plus ``new_tokens`` decode steps on one profile part."""

    def __init__(self, graphs: DecodeGraphs, profile: DeviceProfile, kind: str, options: Options, new_tokens: int, *, name: str = "model"):
        self.graphs, self.profile, self.kind, self.options = graphs, profile, kind, options
        self.new_tokens, self.name = new_tokens, name
        self.prefill = Analysis(graphs.prefill, profile, kind, options, name=name)
        self._steps: dict[int, Analysis] = {}

    @classmethod
    def of(cls, model, args: Any = (), kwargs: dict | None = None, profile: DeviceProfile | str | None = None,
           options: Options = Options(), *, new_tokens: int, name: str = "model") -> "DecodeAnalysis":
        prof, kind = resolve_profile(profile, options.device)
        graphs = decode_graphs(model, args, kwargs, device=capture_device_for(kind, options), user_files=options.user_files)
        return cls(graphs, prof, kind, options, new_tokens, name=name)

    def step(self, i: int) -> Analysis:
        """The analysis of step ``i`` (0-based): the step that reads the prompt and ``i`` tokens."""
        if i not in self._steps:
            graph = self.graphs.step(self.graphs.prompt_tokens + i)
            self._steps[i] = Analysis(graph, self.profile, self.kind, self.options, name=f"{self.name} step {i}", devices=self.prefill._devices)
        return self._steps[i]

    def priced_steps(self) -> list[int]:
        """The steps priced; the others are interpolated between them (a step's time is smooth in
        the cache length: the cache's bytes grow by a constant per step)."""
        n = self.new_tokens
        if n <= PRICED_STEPS_MAX:
            return list(range(n))
        stride = math.ceil(n / PRICED_STEPS_MAX)
        return sorted(set(range(0, n, stride)) | {n - 1})

    def _run_steps(self, dev: DeviceModel) -> tuple[Step, list[Step]]:
        """(the prefill's map, every step's map) on ``dev``."""
        def run_step(a: Analysis) -> Step:
            # a GPU's kernel times do not depend on the host's speed; the CPU's ops run on it
            kernels = a.kernels() if (dev is a.dev or dev.kind == "cuda") else price_kernels(a.graph.ops, a.costs, dev)
            return Schedule(a.graph, a.costs, dev, kernels, is_module=a.is_module).run_step()

        prefill = run_step(self.prefill)
        priced = self.priced_steps()
        maps = {i: run_step(self.step(i)) for i in priced}
        steps: list[Step] = []
        for lo, hi in zip(priced, priced[1:] + [priced[-1] + 1]):
            steps.append(maps[lo])
            for i in range(lo + 1, min(hi, self.new_tokens)):
                w = (i - lo) / (hi - lo)
                steps.append(tuple((1 - w) * x + w * y for x, y in zip(maps[lo], maps[hi])))
        return prefill, steps[: self.new_tokens]

    def report(self, host_scale: float | None = None) -> DecodeReport:
        """The loop predicted as calibrated, or with every host cost times ``host_scale``."""
        dev = self.prefill.dev
        if host_scale is not None:
            dev = dev.with_overheads(scaled_overheads(dev.overheads, host_scale))
        prefill_map, step_maps = self._run_steps(dev)
        sync = dev.overheads.synchronize_s.median_s if (dev.kind == "cuda" and dev.overheads.synchronize_s) else 0.0
        h, e = apply_step(prefill_map, 0.0, 0.0)
        prefill_end = max(h, e)
        ends = []
        for m in step_maps:
            h, e = apply_step(m, h, e)
            ends.append(max(h, e))
        step_s = [b - a for a, b in zip([prefill_end] + ends, ends)]
        decode_s = ends[-1] - prefill_end
        last = self.step(self.new_tokens - 1)
        g = self.graphs
        cache_final = g.cache_bytes(self.new_tokens)
        weights = g.prefill.parameters_bytes
        peak_bw = dev.bandwidth.bytes_per_s(1 << 34, "copy")
        mean_cache = (g.cache_bytes(0) + cache_final) / 2
        return DecodeReport(
            batch=g.batch, prompt_tokens=g.prompt_tokens, new_tokens=self.new_tokens,
            prefill_s=prefill_end + sync,
            decode_s=decode_s, total_s=ends[-1] + sync, per_token_s=decode_s / self.new_tokens, step_s=step_s,
            step_regime_s=last.timeline().regime_s() if host_scale is None else last.at_host_scale(host_scale).timeline().regime_s(),
            step_ops=len(last.graph.ops), step_flops=sum(c.flops for c in last.costs),
            step_bytes=sum(c.bytes_read + c.bytes_written for c in last.costs), weights_bytes=weights,
            cache_bytes_prefill=g.cache_bytes(0), cache_bytes_final=cache_final, cache_bytes_per_token=g.cache_bytes_per_token,
            memory_floor_per_token_s=(weights + mean_cache) / peak_bw if peak_bw else 0.0,
            cuda_graphs_per_token_s=self._graphed_step_s(last, dev), steps_derived=g.derived,
        )

    @staticmethod
    def _graphed_step_s(step: Analysis, dev: DeviceModel) -> float | None:
        """One step replayed as a CUDA graph, back to back: the graph's launch or its kernels,
        whichever is longer (the host launches the next replay while the device runs this one)."""
        ov = dev.overheads
        if dev.kind != "cuda" or ov.graph_kernel_s is None or ov.graph_launch_s is None:
            return None
        floor = ov.graph_kernel_s.median_s
        device = sum(max(max(c, m), floor * cost.kernels) for cost, (_, c, m, _) in zip(step.costs, step.kernels()) if cost.kernels)
        return max(ov.graph_launch_s.median_s, device)

