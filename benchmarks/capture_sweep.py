"""Capture robustness: ``roofline.analyze`` over many library models it was never tuned on, no timing.

    python benchmarks/capture_sweep.py [--libraries torchvision timm transformers] [--per-family N] [--budget-s S]

Each model is built with random weights at batch 1 in float32 (transformers architectures from
small configs: hidden 128, 2 layers, 4 heads; Mixtral-style mixture of experts in bfloat16, the
dtype its grouped GEMM needs) and analyzed with the shipped H100 profile; each line says whether it
captured, its op count, and any op without a cost formula; the last line counts them. A failure is a
model a user would get an error for: run it on the GPU machine, where the libraries and the real
device are (the transformers part also runs on the CPU machine).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

import roofline  # noqa: E402

PROFILE = "nvidia-h100-80gb-hbm3"
TIMM_FAMILIES = [
    "resnet", "efficientnet", "convnext", "vit_", "deit", "swin", "regnet", "mobilenet", "densenet", "inception", "xception",
    "cait", "coat", "levit", "mixer", "resmlp", "gmlp", "poolformer", "convmixer", "cspnet", "cspdark", "dla", "dpn", "ghostnet",
    "hrnet", "nfnet", "rexnet", "repvgg", "res2net", "resnest", "sknet", "tresnet", "twins", "visformer", "volo", "xcit", "maxvit",
    "coatnet", "efficientformer", "fastvit", "mobilevit", "edgenext", "eva", "beit", "crossvit", "pit", "tnt", "nest", "hardcorenas",
    "lcnet", "mnasnet", "fbnet", "tinynet", "vgg", "seresnext", "selecsls", "gernet", "hgnet", "inception_next", "caformer", "davit", "focalnet",
]
# (model_type, Auto class): encoders, decoders, encoder-decoders, vision and speech
HF_MODELS = [
    ("bert", "AutoModel"), ("electra", "AutoModel"), ("deberta-v2", "AutoModel"), ("deberta", "AutoModel"), ("mobilebert", "AutoModel"),
    ("xlm-roberta", "AutoModel"), ("mpnet", "AutoModel"), ("convbert", "AutoModel"), ("big_bird", "AutoModel"), ("xlnet", "AutoModel"),
    ("longformer", "AutoModel"), ("gpt_neox", "AutoModelForCausalLM"), ("gptj", "AutoModelForCausalLM"), ("bloom", "AutoModelForCausalLM"),
    ("falcon", "AutoModelForCausalLM"), ("phi", "AutoModelForCausalLM"), ("phi3", "AutoModelForCausalLM"), ("gemma", "AutoModelForCausalLM"),
    ("gemma2", "AutoModelForCausalLM"), ("qwen2", "AutoModelForCausalLM"), ("codegen", "AutoModelForCausalLM"), ("gpt_neo", "AutoModelForCausalLM"),
    ("stablelm", "AutoModelForCausalLM"), ("olmo", "AutoModelForCausalLM"), ("ctrl", "AutoModelForCausalLM"), ("mixtral", "AutoModelForCausalLM"),
    ("pegasus", "AutoModelForSeq2SeqLM"), ("mbart", "AutoModelForSeq2SeqLM"), ("marian", "AutoModelForSeq2SeqLM"), ("mt5", "AutoModelForSeq2SeqLM"),
    ("bigbird_pegasus", "AutoModelForSeq2SeqLM"), ("swin", "AutoModel"), ("convnext", "AutoModel"), ("resnet", "AutoModel"),
    ("segformer", "AutoModel"), ("deit", "AutoModel"), ("beit", "AutoModel"), ("dinov2", "AutoModel"), ("mobilevit", "AutoModel"),
    ("levit", "AutoModel"), ("poolformer", "AutoModel"), ("regnet", "AutoModel"), ("efficientnet", "AutoModel"), ("wav2vec2", "AutoModel"),
    ("hubert", "AutoModel"), ("clip", "AutoModel"), ("blip", "AutoModel"),
]
HF_VISION = {"swin", "convnext", "resnet", "segformer", "deit", "beit", "dinov2", "mobilevit", "levit", "poolformer", "regnet", "efficientnet"}
HF_SEQ2SEQ = {"pegasus", "mbart", "marian", "mt5", "bigbird_pegasus"}
HF_SMALL = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=256)
TV_VIDEO = ("r3d", "r2plus1d", "mc3", "s3d", "mvit", "swin3d")


def torchvision_cases():
    import torchvision

    for name in torchvision.models.list_models():
        if name.startswith("raft"):  # optical flow: two frames, not one input
            continue
        def build(name=name):
            model = torchvision.models.get_model(name, weights=None, **({"weights_backbone": None} if _takes_backbone(name) else {}))
            if any(k in name for k in TV_VIDEO):
                side = 224 if any(k in name for k in ("mvit", "swin3d", "s3d")) else 112
                return model, (torch.randn(1, 3, 16, side, side),)
            side = 299 if "inception" in name else 224
            x = torch.randn(1, 3, side, side)
            return model, ([x[0]],) if _detection(name) else (x,)
        yield "torchvision", name, build


def _detection(name: str) -> bool:
    return any(k in name for k in ("rcnn", "retinanet", "fcos", "ssd"))


def _takes_backbone(name: str) -> bool:
    return _detection(name) or any(k in name for k in ("deeplab", "fcn", "lraspp"))


def timm_cases(per_family: int):
    import timm

    names = timm.list_models()
    picked = dict.fromkeys(n for f in TIMM_FAMILIES for n in [m for m in names if m.startswith(f)][:per_family])
    for name in picked:
        def build(name=name):
            model = timm.create_model(name, pretrained=False)
            side = ((getattr(model, "pretrained_cfg", None) or {}).get("input_size") or (3, 224, 224))[-1]
            return model, (torch.randn(1, 3, side, side),)
        yield "timm", name, build


def transformers_cases():
    import transformers
    from transformers import AutoConfig

    for kind, auto in HF_MODELS:
        def build(kind=kind, auto=auto):
            config = AutoConfig.for_model(kind)
            if kind not in HF_VISION:
                small = dict(HF_SMALL, num_key_value_heads=HF_SMALL["num_attention_heads"], rotary_dim=16,
                             head_dim=HF_SMALL["hidden_size"] // HF_SMALL["num_attention_heads"])
                for key, value in small.items():
                    if getattr(config, key, None) is not None:
                        try:
                            setattr(config, key, value)
                        except AttributeError:  # a derived property (Falcon's head_dim)
                            pass
            model = getattr(transformers, auto).from_config(config)
            if kind == "mixtral":
                model = model.to(torch.bfloat16)
            return model, _hf_inputs(kind, config)
        yield "transformers", kind, build


def _hf_inputs(kind: str, config) -> dict:
    if kind in HF_VISION:
        side = getattr(config, "image_size", 224)
        side = side if isinstance(side, int) else side[0]
        return {"pixel_values": torch.randn(1, getattr(config, "num_channels", 3), side, side)}
    if kind in ("wav2vec2", "hubert"):
        return {"input_values": torch.randn(1, 16000)}
    ids = torch.randint(0, min(getattr(config, "vocab_size", None) or 1000, 1000), (1, 64))
    if kind in ("clip", "blip"):
        return {"input_ids": ids, "pixel_values": torch.randn(1, 3, 224, 224)}
    if kind in HF_SEQ2SEQ:
        return {"input_ids": ids, "decoder_input_ids": ids[:, :16]}
    return {"input_ids": ids}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--libraries", nargs="+", default=["torchvision", "timm", "transformers"])
    ap.add_argument("--per-family", type=int, default=2, help="timm models per family name prefix")
    ap.add_argument("--budget-s", type=float, default=float("inf"), help="stop starting models after this many seconds")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    sources = {"torchvision": torchvision_cases, "timm": lambda: timm_cases(args.per_family), "transformers": transformers_cases}
    started, ok, failed, unpriced = time.time(), 0, [], 0
    for library in args.libraries:
        try:
            cases = list(sources[library]())
        except ImportError as e:
            print(f"{library}: not installed here ({e})")
            continue
        for lib, name, build in cases:
            if time.time() - started > args.budget_s:
                print(f"stopped at the budget of {args.budget_s:.0f} s")
                break
            try:
                model, inputs = build()
            except Exception as e:  # noqa: BLE001 - a model the library itself cannot build here is not ours
                print(f"skip {lib:12s} {name:40s} the library cannot build it here: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}")
                continue
            t0 = time.time()
            try:
                args_, kwargs = (inputs, {}) if isinstance(inputs, tuple) else ((), inputs)
                report = roofline.analyze(model.eval(), kwargs or args_, profile=PROFILE, batch_sweep=False)
            except Exception as e:  # noqa: BLE001 - the point of the sweep: any failure is reported
                failed.append(name)
                print(f"FAIL {lib:12s} {name:40s} {type(e).__name__}: {str(e).splitlines()[0][:240] if str(e) else ''}", flush=True)
                continue
            ok += 1
            missing = sorted({o.target for o in report.ops if not o.supported})
            unpriced += bool(missing)
            print(f"ok   {lib:12s} {name:40s} {len(report.ops):5d} ops {time.time() - t0:5.1f} s" + (f"  no formula: {', '.join(missing)}" if missing else ""), flush=True)
    print(f"captured {ok}, failed {len(failed)}{': ' + ', '.join(failed) if failed else ''}; {unpriced} captured with an op that has no formula")
    return 0


if __name__ == "__main__":
    sys.exit(main())
