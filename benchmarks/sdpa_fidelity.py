"""Does the capture see the attention a real run executes? scaled_dot_product_attention calls of the zoo's
attention models, captured (fake tensors on the GPU) against run for real on the GPU.

    python benchmarks/sdpa_fidelity.py [--only LABEL ...] [--json OUT.json]

For every zoo case with attention, each distinct call of ``F.scaled_dot_product_attention`` (its
arguments' shapes, strides and dtypes, the mask, ``is_causal``, ``enable_gqa``, ``scale``) as the capture
made it and as the real model made it, the backend CUDA chose for the real call
(``torch._fused_sdp_choice``), the fused aten op the capture recorded, and for a real call that fell to
the math backend, why each fused backend refused it (SDPA's own warnings when that backend is forced).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from roofline.pipeline import Analysis, Options, resolve_profile  # noqa: E402

_ORIGINAL = F.scaled_dot_product_attention


def _meta(t):
    if t is None:
        return None
    return dict(shape=list(t.shape), stride=list(t.stride()), dtype=str(t.dtype).removeprefix("torch."), grad=bool(t.requires_grad))


class Calls:
    """Wraps F.scaled_dot_product_attention (and the name transformers imported) to log each call."""

    def __init__(self):
        self.seen: dict[str, dict] = {}
        self.order: list[str] = []

    def __call__(self, q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
        sig = dict(q=_meta(q), k=_meta(k), v=_meta(v), mask=_meta(attn_mask), dropout_p=dropout_p, is_causal=bool(is_causal), scale=scale,
                   enable_gqa=bool(enable_gqa), grad_mode=torch.is_grad_enabled())
        key = json.dumps(sig, sort_keys=True)
        if key not in self.seen:
            entry = dict(sig, calls=0)
            if not type(q).__name__.startswith("Fake"):
                try:
                    choice = torch._fused_sdp_choice(q, k, v, attn_mask, dropout_p, is_causal, scale=scale, enable_gqa=enable_gqa)
                    entry["backend"] = torch.nn.attention.SDPBackend(choice).name
                except Exception as e:  # noqa: BLE001
                    entry["backend"] = f"?: {type(e).__name__}: {e}"[:200]
                if entry["backend"] == "MATH":
                    entry["refusals"] = refusals(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)
            self.seen[key] = entry
            self.order.append(key)
        self.seen[key]["calls"] += 1
        return _ORIGINAL(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)

    def rows(self) -> list[dict]:
        return [self.seen[k] for k in self.order]


def refusals(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa) -> dict:
    """Why each fused backend refuses a call: the warnings SDPA gives when it is the only one allowed."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    out = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        with warnings.catch_warnings(record=True) as caught, sdpa_kernel([backend]):
            warnings.simplefilter("always")
            try:
                _ORIGINAL(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale, enable_gqa=enable_gqa)
                out[backend.name] = "ran"
            except Exception as e:  # noqa: BLE001
                out[backend.name] = " | ".join(str(w.message).split("\n")[0][:160] for w in caught) or f"{type(e).__name__}: {str(e)[:160]}"
    return out


def install(calls: Calls):
    import transformers.integrations.sdpa_attention as sa

    F.scaled_dot_product_attention = calls
    sa.torch.nn.functional.scaled_dot_product_attention = calls


def main(argv: list[str]) -> int:
    from benchmarks.zoo.registry import cases as zoo_cases
    from benchmarks.zoo.run import _build

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", default="nvidia-h100-80gb-hbm3")
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    profile, kind = resolve_profile(args.profile, "cuda")
    options = Options(device="cuda", capture_device="cuda", batch_sweep=False)
    todo = [c for c in zoo_cases() if c.model.library == "transformers" or c.model.name in ("nn_transformer_encoder", "nn_multihead_attention", "clip_text_hand")]
    if args.only:
        todo = [c for c in todo if c.label in args.only]
    out = []
    for case in todo:
        captured, real = Calls(), Calls()
        try:
            install(captured)
            with torch.device("meta"):
                model, a, k = case.model.build(case.batch, case.dtype)
            analysis = Analysis.of(model, a, k, profile, options, name=case.label)
            fused = collections.Counter(op.name for op in analysis.graph.ops if "attention" in op.name)
            install(real)
            rm, ra, rk = _build(case, "cuda")
            with torch.no_grad():
                rm(*ra, **rk)
            torch.cuda.synchronize()
            del rm, ra, rk
        except Exception as e:  # noqa: BLE001
            print(f"{case.label}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
            continue
        finally:
            F.scaled_dot_product_attention = _ORIGINAL
        row = dict(label=case.label, captured=captured.rows(), real=real.rows(), captured_ops=dict(fused))
        out.append(row)
        same = [dict(r, calls=0, backend=None, refusals=None) for r in captured.rows()] == [dict(r, calls=0, backend=None, refusals=None) for r in real.rows()]
        print(f"{case.label:<30} capture {dict(fused)} | real backends {[(r['backend'], r['calls']) for r in real.rows()]} | same calls: {same}", flush=True)
        if not same:
            for r in captured.rows():
                print(f"    captured: mask {r['mask'] and (r['mask']['shape'], r['mask']['stride'], r['mask']['dtype'])} causal {r['is_causal']} gqa {r['enable_gqa']} x{r['calls']}")
            for r in real.rows():
                print(f"    real:     mask {r['mask'] and (r['mask']['shape'], r['mask']['stride'], r['mask']['dtype'])} causal {r['is_causal']} gqa {r['enable_gqa']} x{r['calls']} -> {r['backend']}")
        for r in real.rows():
            if r.get("refusals"):
                print(f"    math because: {r['refusals']}")
        torch.cuda.empty_cache()
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=time.strftime("%Y-%m-%d"), cases=out)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
