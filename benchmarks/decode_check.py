"""LLM decode predicted against measured: a prefill plus N steps with the key-value cache.

    python benchmarks/decode_check.py --profile P [--tokens 64] [--json OUT] [MODEL_FILE ...]

For each causal-LM model file (default: examples/hf_gpt2.py and examples/hf_llama.py), predicts the
loop ``roofline advise --decode N`` predicts (``roofline.decode``), then times the same hand-written
loop on the profile's device (``roofline.measure.decode``: the prefill alone and the whole loop, in
rounds beside the host-speed index), and prints prefill, per token and total, predicted as
calibrated and at the host scale timed beside the loop, against measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from roofline.decode import DecodeAnalysis  # noqa: E402
from roofline.graph.loading import load_model_file  # noqa: E402
from roofline.measure.decode import measure_decode  # noqa: E402
from roofline.measure.device import device_for  # noqa: E402
from roofline.pipeline import Options, resolve_profile  # noqa: E402

DEFAULT = ["examples/hf_gpt2.py", "examples/hf_llama.py"]


def err(p: float, m: float) -> str:
    return f"{100 * (p - m) / m:+6.1f}%"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="*", default=DEFAULT)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--device", choices=["cuda", "cpu"])
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--json")
    args = ap.parse_args()
    profile, kind = resolve_profile(args.profile, args.device)
    device = device_for(profile, kind)
    print(f"decode on {profile.device} ({kind}), profile '{profile.name}', torch {torch.__version__}, {time.strftime('%Y-%m-%d')}, {args.tokens} new tokens")
    rows = []
    for path in args.models:
        meta = load_model_file(REPO / path if not Path(path).is_absolute() else path)
        t0 = time.perf_counter()
        d = DecodeAnalysis.of(meta.model, meta.args, meta.kwargs, profile, Options(device=kind), new_tokens=args.tokens, name=meta.name)
        pred = d.report()
        analyze_s = time.perf_counter() - t0
        real = load_model_file(REPO / path if not Path(path).is_absolute() else path, materialize=True)
        m = measure_decode(real.model, real.args, real.kwargs, device, args.tokens, profile.part(kind).measurements.overheads)
        del real
        scale = m.host_speed.scale if m.host_speed else None
        now = d.report(host_scale=scale) if scale else None
        print(f"{meta.name}: batch {pred.batch}, prompt {pred.prompt_tokens}, step {pred.step_ops} ops, predicted in {analyze_s:.1f} s; host x{scale:.2f}" if scale else meta.name)
        lines = [
            ("prefill", pred.prefill_s, now.prefill_s if now else None, m.prefill.median_s),
            ("per token", pred.per_token_s, now.per_token_s if now else None, m.per_token_s),
            ("total", pred.total_s, now.total_s if now else None, m.loop.median_s),
        ]
        for label, p, n, meas in lines:
            at = f"  | at host x{scale:.2f} {n * 1e3:9.3f} ms {err(n, meas)}" if n else ""
            print(f"  {label:<10} predicted {p * 1e3:9.3f} ms  measured {meas * 1e3:9.3f} ms  {err(p, meas)}{at}")
        rows.append(dict(
            model=meta.name, new_tokens=args.tokens, prediction=pred.model_dump(), at_host_scale=now.model_dump() if now else None,
            measured_prefill_s=m.prefill.median_s, measured_loop_s=m.loop.median_s, measured_loop_iqr_s=m.loop.iqr_s,
            measured_per_token_s=m.per_token_s, host_scale=scale,
        ))
        if kind == "cuda":
            torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=profile.device, profile=profile.name, torch=torch.__version__, date=time.strftime("%Y-%m-%d"), rows=rows), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
