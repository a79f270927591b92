"""The advice as sentences: what a report recommends, in the order a reader needs it."""

from __future__ import annotations

from roofline.advice.padding import padding_line
from roofline.schema.report import DecodeReport, Report
from roofline.units import count, seconds

GAIN_WORTH_IT = 0.10  # a change that saves less than this share of the time is not worth a user's effort

_CHANGES = {
    "cuda_graphs": "capture the forward in a CUDA graph (torch.cuda.graphs) and replay it",
    "torch_compile": "torch.compile the model",
    "torch_compile_reduce_overhead": 'torch.compile(model, mode="reduce-overhead") (fusion plus CUDA graphs)',
}


def _why(best_name: str, overhead_pct: float, fusion_gain_s: float, total_s: float) -> str:
    """What the recommended change removes: host overhead, memory traffic, or both."""
    fused_pct = 100 * fusion_gain_s / total_s if total_s else 0
    if best_name == "cuda_graphs" or fused_pct < 5:
        return f"{overhead_pct:.0f}% of eager time is host overhead"
    if overhead_pct < 5:
        return f"fusing pointwise ops removes {fused_pct:.0f}% of eager time in memory traffic and launches"
    return f"{overhead_pct:.0f}% of eager time is host overhead and fusion removes {fused_pct:.0f}%"


def speedup_lines(report: Report) -> list[str]:
    """Predicted totals under torch.compile, CUDA graphs and both; a recommendation when one pays."""
    total_s = report.total.predicted_s
    alts = report.alternatives
    alternatives = alts.by_name()
    fused_total = alts.fused_s
    lines = []
    overhead_pct = 100 * report.total.regime_s.get("overhead", 0) / total_s if total_s else 0
    best_name, best = min(alternatives.items(), key=lambda kv: kv[1])
    listing = ", ".join(f"{k.replace('_', ' ')} {seconds(v)}" for k, v in alternatives.items())
    if best_name != "eager" and total_s - best > GAIN_WORTH_IT * total_s:
        lines.append(
            f"recommended: {_CHANGES[best_name]}: {seconds(best)} instead of {seconds(total_s)} ({total_s / best:.1f}x); "
            f"{_why(best_name, overhead_pct, total_s - fused_total, total_s)} ({listing})"
        )
    elif len(alternatives) > 1:
        lines.append(f"no change recommended: torch.compile or CUDA graphs would save under {100 * GAIN_WORTH_IT:.0f}% ({listing})")
    fusion = report.fusion
    fusion_gain = total_s - fused_total
    if fusion and fusion_gain > 0.05 * total_s:
        lines.append(
            f"fusion: {len(fusion)} group{'s' if len(fusion) > 1 else ''} of pointwise/reduction ops could each run as one kernel: "
            f"{seconds(fused_total)} instead of {seconds(total_s)} ({100 * fusion_gain / total_s:.0f}% less); largest: ops "
            f"{fusion[0].ops[0]}..{fusion[0].ops[-1]} ({fusion[0].kind}) saves {seconds(fusion[0].predicted_gain_s)}"
        )
    return lines


def copies_line(report: Report, copies_per_call: bool) -> str | None:
    """Pinned memory and streams, when the GPU is recommended and copies are a fifth of the loop."""
    streams = report.streams
    if streams is None or report.placement.recommended != "cuda" or not copies_per_call:
        return None
    copy_share = (streams.h2d_pinned_s + streams.d2h_pinned_s) / max(streams.h2d_pinned_s + streams.compute_s + streams.d2h_pinned_s, 1e-12)
    if copy_share <= 0.2:
        return None
    return (
        f"copies: for a stream of {streams.batches} batches, pinned host memory takes the loop from "
        f"{seconds(streams.sequential_pageable_s)} to {seconds(streams.sequential_pinned_s)} ({streams.pinned_gain:.1f}x), "
        f"and overlapping copies with compute on separate CUDA streams to {seconds(streams.streams_pinned_s)} "
        f"(a further {streams.streams_gain:.1f}x)"
    )


def advice_lines(report: Report, *, copies_per_call: bool = True) -> list[str]:
    """Placement, the compiled and graphed alternatives, fusion, copies and unpriced ops, in words."""
    place = report.placement
    lines = [f"placement: {place.recommended} — {place.reason}"]
    lines += speedup_lines(report)
    copies = copies_line(report, copies_per_call)
    if copies:
        lines.append(copies)
    lines += [padding_line(entry) for entry in report.padding]
    if report.unsupported_ops:
        lines.append(
            f"{sum(report.unsupported_ops.values())} ops have no cost formula and are priced by their bytes only: "
            f"{', '.join(sorted(report.unsupported_ops))}"
        )
    return lines


def decode_advice(d: DecodeReport) -> str:
    """One line of advice on the decode loop: per token, what bounds it, and the way out."""
    regime = max(("compute", "memory", "overhead"), key=lambda k: d.step_regime_s.get(k, 0.0))
    line = (
        f"decode: {d.new_tokens} tokens after a {d.prompt_tokens}-token prefill ({seconds(d.prefill_s)}) take {seconds(d.decode_s)}, "
        f"{seconds(d.per_token_s)} per token, {regime}-bound; the cache grows to {count(d.cache_bytes_final, 'B')}; "
        f"reading weights and cache once bounds a step at {seconds(d.memory_floor_per_token_s)}"
    )
    if d.cuda_graphs_per_token_s is not None and d.cuda_graphs_per_token_s < 0.8 * d.per_token_s:
        line += f"; one step as a CUDA graph (torch.compile mode='reduce-overhead', or a static cache): {seconds(d.cuda_graphs_per_token_s)} per token"
    return line
