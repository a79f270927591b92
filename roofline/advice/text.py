"""The advice as sentences: what a report recommends, in the order a reader needs it."""

from __future__ import annotations

from roofline.advice.layout import layout_line
from roofline.advice.padding import padding_line
from roofline.advice.plans import DEVICE_WORDS, plan_label
from roofline.schema.report import DecodeReport, Report
from roofline.units import count, seconds



def plan_lines(report: Report) -> list[str]:
    """The recommended plan and why, the runners-up, and the plans that do not apply."""
    plans = report.plans
    rec = report.recommended_plan
    if rec is None:
        blocked = list(dict.fromkeys(p.reason for p in plans if not p.applicable))
        return [f"plan: none of the {len(plans)} ways to run this model applies: {'; '.join(blocked) or 'nothing could be priced'}"]
    lines = [f"plan: {plan_label(rec)} — {seconds(rec.predicted_s)} per call: {rec.reason}"]
    runners = [p for p in plans if not p.recommended and p.applicable and p.predicted_s is not None][:4]
    if runners:
        lines.append("runners-up: " + "; ".join(
            f"{plan_label(p)} {seconds(p.predicted_s)}" + (f" ({p.reason})" if p.reason else "") for p in runners
        ))
    blocked: dict[str, list[str]] = {}
    for p in plans:
        if not p.applicable:
            blocked.setdefault(p.reason, []).append(plan_label(p))
    for reason, labels in blocked.items():
        lines.append(f"does not apply: {', '.join(labels)}: {reason}")
    return lines


def fusion_line(report: Report) -> str | None:
    """What torch.compile's fusion buys, when a compiled plan is recommended on the predicted part."""
    rec, fusion = report.recommended_plan, report.fusion
    if rec is None or rec.device != report.profile.kind or not rec.execution.startswith("torch_compile") or not fusion:
        return None
    total_s = report.total.predicted_s
    fused_s = report.alternatives.fused_s if report.alternatives else total_s
    if total_s - fused_s <= 0.05 * total_s:
        return None
    return (
        f"fusion (part of torch.compile's gain): {len(fusion)} group{'s' if len(fusion) > 1 else ''} of pointwise/reduction ops each "
        f"run as one kernel: eager {seconds(total_s)} → {seconds(fused_s)} ({100 * (total_s - fused_s) / total_s:.0f}% less), largest "
        f"ops {fusion[0].ops[0]}..{fusion[0].ops[-1]} ({fusion[0].kind})"
    )


# the model's own Python is told when it is at least this share of the host's time
PYTHON_WORTH = 0.1


def python_line(report: Report) -> str | None:
    """The Python of the model's own code between its ops, when it is a tenth of the host's time or more."""
    calls = sum(op.python_calls for op in report.ops)
    python_s = sum(op.python_s for op in report.ops)
    host_s = report.total.host_s or sum(op.host_s for op in report.ops)
    if not calls or host_s <= 0 or python_s < PYTHON_WORTH * host_s:
        return None
    top = max(report.ops, key=lambda op: op.python_calls)
    where = f"{top.module or 'the model'}" + (f" before {top.source}" if top.source else "")
    return (
        f"python: the model's own code makes {calls} Python calls between its {len(report.ops)} ops, {seconds(python_s)} of the host's "
        f"{seconds(host_s)} ({100 * python_s / host_s:.0f}%), most in {where} ({top.python_calls}); torch.compile and CUDA graphs run none of it"
    )


def uncertain_line(report: Report) -> str | None:
    """The ops whose price is flagged, with the share of the predicted time they carry."""
    u = report.uncertain
    if not u.ops:
        return None
    what = "; ".join(f"{name.removeprefix('aten.')} x{n}: {u.reasons.get(name, '')}" for name, n in sorted(u.by_op.items(), key=lambda kv: -kv[1]))
    return f"uncertain: {u.ops} op{'s' if u.ops > 1 else ''} carry {100 * u.share:.0f}% of the predicted time ({seconds(u.predicted_s)}) and are not covered by the profile: {what}"


def memory_line(report: Report) -> str | None:
    """A device whose memory one call does not fit, or fills past 90 %."""
    tight = [m for m in report.memory if m.capacity_bytes and m.need_bytes > 0.9 * m.capacity_bytes]
    if not tight:
        return None
    return "memory: " + "; ".join(
        f"one call holds at least {count(m.need_bytes, 'B')} (weights {count(m.weights_bytes, 'B')}, activations {count(m.peak_activations_bytes, 'B')}) "
        f"against {count(m.capacity_bytes, 'B')} on the {DEVICE_WORDS[m.device]}" + ("" if m.fits else ": it does not fit")
        for m in tight
    )


def copies_line(report: Report, copies_per_call: bool) -> str | None:
    """Pinned memory and streams, when the GPU is recommended and copies are a fifth of the loop."""
    streams, rec = report.streams, report.recommended_plan
    if streams is None or rec is None or rec.device != "cuda" or not copies_per_call:
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
    """The plan first, then what is consistent with it: the model's own Python, fusion, copies, padding, layouts, memory, uncertain ops."""
    lines = plan_lines(report)
    rec = report.recommended_plan
    on_predicted_part = rec is not None and rec.device == report.profile.kind
    for line in (python_line(report), fusion_line(report), copies_line(report, copies_per_call)):
        if line:
            lines.append(line)
    if on_predicted_part:
        lines += [padding_line(entry) for entry in report.padding]
        lines += [layout_line(entry) for entry in report.layout]
    for line in (memory_line(report), uncertain_line(report)):
        if line:
            lines.append(line)
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
