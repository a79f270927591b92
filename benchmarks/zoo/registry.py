"""The accuracy zoo: real models people run, built from library constructors and configs with random
weights (never downloaded), each at batch 1 and a typical batch, in its natural dtype and in the
half precision people run it in.

The model of time is judged on these, never on the case a change fixes: CNNs (ResNet, ResNeXt,
MobileNet, EfficientNet, ConvNeXt, RegNet, DenseNet, ShuffleNet, a UNet), vision transformers (ViT,
DeiT, Swin, LeViT, MLP-Mixer), encoders (BERT, RoBERTa, DistilBERT, ALBERT), decoders (GPT-2, OPT,
Llama-, Mistral- and Qwen2-shaped), encoder-decoders (T5, BART, Whisper), recurrent models, and the
kinds of model a user writes by hand. ``ZooModel.build(batch, dtype)`` builds on the caller's default
device (``with torch.device("meta")`` to predict, ``"cuda"`` to time); a constructor that computes
with tensor values while it builds (torchvision's RegNet) is built on the CPU and moved.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

from roofline.graph.values import Recipes

HALF = {"cnn": torch.float16, "vit": torch.float16, "encoder": torch.float16, "encdec": torch.float16, "decoder": torch.bfloat16, "mlp": torch.float16, "other": torch.float16}
TYPICAL_BATCH = {"cnn": 32, "vit": 32, "encoder": 8, "decoder": 4, "encdec": 8, "rnn": 16, "mlp": 64, "other": 16}
DTYPE_LABEL = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


@dataclass(frozen=True)
class ZooModel:
    name: str
    library: str  # torchvision | timm | transformers | torch
    family: str  # cnn | vit | encoder | decoder | encdec | rnn | mlp | other
    make: Callable[[], nn.Module]
    inputs: Callable[[int], tuple[tuple, dict]]  # batch -> (args, kwargs), float inputs in float32
    batches: tuple[int, ...] = ()
    dtypes: tuple[torch.dtype, ...] = ()

    def build(self, batch: int, dtype: torch.dtype) -> tuple[nn.Module, tuple, dict]:
        """(model in eval mode in ``dtype``, args, kwargs) on the default device."""
        device = torch.get_default_device()
        with Recipes() if device.type == "meta" else contextlib.nullcontext():  # values of constant inputs (masks)
            return self._build(device, batch, dtype)

    def _build(self, device: torch.device, batch: int, dtype: torch.dtype) -> tuple[nn.Module, tuple, dict]:
        try:
            model = self.make()
        except (NotImplementedError, RuntimeError):  # computes on tensor values while it builds
            with torch.device("cpu"):
                model = self.make()
            model = model.to(device)
        model = model.to(dtype).eval()
        args, kwargs = self.inputs(batch)
        cast = lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
        return model, tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


@dataclass(frozen=True)
class ZooCase:
    model: ZooModel
    batch: int
    dtype: torch.dtype

    @property
    def label(self) -> str:
        return f"{self.model.name} b{self.batch} {DTYPE_LABEL[self.dtype]}"


# ---- inputs ---------------------------------------------------------------------------------------


def images(size: int = 224):
    return lambda b: ((torch.randn(b, 3, size, size),), {})


def tokens(vocab: int, seq: int, mask: bool = True, types: bool = False):
    def make(b):
        kw = {"input_ids": torch.randint(0, vocab, (b, seq))}
        if mask:
            kw["attention_mask"] = torch.ones(b, seq, dtype=torch.long)
        if types:
            kw["token_type_ids"] = torch.zeros(b, seq, dtype=torch.long)
        return (), kw
    return make


def seq2seq(vocab: int, seq: int, target: int):
    return lambda b: ((), {"input_ids": torch.randint(0, vocab, (b, seq)), "attention_mask": torch.ones(b, seq, dtype=torch.long), "decoder_input_ids": torch.randint(0, vocab, (b, target))})


# ---- library constructors -------------------------------------------------------------------------


def tv(name: str, **kw):
    """A torchvision constructor by its name under ``torchvision.models`` (``segmentation.fcn_resnet50``)."""
    def make():
        import torchvision

        return functools.reduce(getattr, name.split("."), torchvision.models)(weights=None, **kw)
    return make


def tm(name: str):
    def make():
        import timm

        return timm.create_model(name, pretrained=False)
    return make


def hf(model_class: str, config_class: str, **config):
    def make():
        import transformers

        return getattr(transformers, model_class)(getattr(transformers, config_class)(**config))
    return make


# ---- models a user writes -------------------------------------------------------------------------


class UNet(nn.Module):
    """A small UNet: conv blocks with GroupNorm, max-pool down, transposed-conv up, skip concatenation."""

    def __init__(self, channels=(32, 64, 128, 256)):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU(), nn.Conv2d(cout, cout, 3, padding=1), nn.GroupNorm(8, cout), nn.SiLU())

        c = channels
        self.downs = nn.ModuleList([block(3 if i == 0 else c[i - 1], c[i]) for i in range(len(c))])
        self.ups = nn.ModuleList([nn.ConvTranspose2d(c[i], c[i - 1], 2, stride=2) for i in range(len(c) - 1, 0, -1)])
        self.up_blocks = nn.ModuleList([block(2 * c[i - 1], c[i - 1]) for i in range(len(c) - 1, 0, -1)])
        self.head = nn.Conv2d(c[0], 1, 1)

    def forward(self, x):
        skips = []
        for i, down in enumerate(self.downs):
            x = down(x)
            if i < len(self.downs) - 1:
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
        for up, blk in zip(self.ups, self.up_blocks):
            x = blk(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


class TCN(nn.Module):
    """A 1-d convolution stack over audio features (dilated residual blocks), float32."""

    def __init__(self, channels=128, layers=6):
        super().__init__()
        self.inp = nn.Conv1d(80, channels, 3, padding=1)
        self.blocks = nn.ModuleList([nn.Conv1d(channels, channels, 3, padding=2 ** i, dilation=2 ** i) for i in range(layers)])
        self.norms = nn.ModuleList([nn.BatchNorm1d(channels) for _ in range(layers)])
        self.out = nn.Conv1d(channels, 32, 1)

    def forward(self, x):
        x = self.inp(x)
        for conv, norm in zip(self.blocks, self.norms):
            x = x + torch.relu(norm(conv(x)))
        return self.out(x)


class Video3d(nn.Module):
    """A small 3-d convolution net over a clip (C3D-like)."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv3d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool3d(2),
            nn.Conv3d(64, 128, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool3d(1),
        )
        self.fc = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class TextBlock(nn.Module):
    """A CLIP-text-like transformer written by hand: explicit q @ k^T, softmax, @ v, at 77 tokens."""

    def __init__(self, width=768, heads=12, layers=4):
        super().__init__()
        self.heads = heads
        self.layers = nn.ModuleList([
            nn.ModuleDict(dict(ln1=nn.LayerNorm(width), qkv=nn.Linear(width, 3 * width), proj=nn.Linear(width, width),
                               ln2=nn.LayerNorm(width), fc1=nn.Linear(width, 4 * width), fc2=nn.Linear(4 * width, width)))
            for _ in range(layers)
        ])
        self.register_buffer("mask", torch.full((77, 77), float("-inf")).triu(1))

    def forward(self, x):
        b, t, w = x.shape
        for layer in self.layers:
            q, k, v = layer["qkv"](layer["ln1"](x)).reshape(b, t, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
            att = (q @ k.transpose(-2, -1)) * (w // self.heads) ** -0.5 + self.mask
            y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, w)
            x = x + layer["proj"](y)
            x = x + layer["fc2"](nn.functional.gelu(layer["fc1"](layer["ln2"](x))))
        return x


class LSTMLM(nn.Module):
    def __init__(self, vocab=10000, dim=512, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = nn.LSTM(dim, dim, layers, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        y, _ = self.rnn(self.emb(ids))
        return self.head(y)


class GRUTagger(nn.Module):
    def __init__(self, features=64, hidden=256, tags=20):
        super().__init__()
        self.rnn = nn.GRU(features, hidden, 2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * hidden, tags)

    def forward(self, x):
        return self.head(self.rnn(x)[0])


class MixerMLP(nn.Module):
    """An MLP over flattened patches with token- and channel-mixing, written by hand."""

    def __init__(self, tokens=64, dim=256, layers=6):
        super().__init__()
        self.blocks = nn.ModuleList([
            nn.ModuleDict(dict(n1=nn.LayerNorm(dim), t1=nn.Linear(tokens, 2 * tokens), t2=nn.Linear(2 * tokens, tokens),
                               n2=nn.LayerNorm(dim), c1=nn.Linear(dim, 4 * dim), c2=nn.Linear(4 * dim, dim)))
            for _ in range(layers)
        ])

    def forward(self, x):
        for b in self.blocks:
            x = x + b["t2"](nn.functional.gelu(b["t1"](b["n1"](x).transpose(1, 2)))).transpose(1, 2)
            x = x + b["c2"](nn.functional.gelu(b["c1"](b["n2"](x))))
        return x


class SeparableStack(nn.Module):
    """Depthwise-separable blocks (MobileNet-v1 style) with BatchNorm and ReLU6."""

    def __init__(self):
        super().__init__()
        cfg = [(32, 64, 1), (64, 128, 2), (128, 128, 1), (128, 256, 2), (256, 256, 1), (256, 512, 2), (512, 512, 1), (512, 1024, 2)]
        layers = [nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU6()]
        for cin, cout, s in cfg:
            layers += [nn.Conv2d(cin, cin, 3, s, 1, groups=cin), nn.BatchNorm2d(cin), nn.ReLU6(), nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU6()]
        self.body = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1))

    def forward(self, x):
        return self.body(x).flatten(1)


class MHA(nn.Module):
    def __init__(self, dim=512, heads=8):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def encoder_stack():
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    return nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)


# ---- the zoo --------------------------------------------------------------------------------------

VOCAB_BERT, VOCAB_GPT2, VOCAB_LLAMA = 30522, 50257, 32000

MODELS: list[ZooModel] = [
    # torchvision
    ZooModel("tv_resnet18", "torchvision", "cnn", tv("resnet18"), images()),
    ZooModel("tv_resnet50", "torchvision", "cnn", tv("resnet50"), images()),
    ZooModel("tv_resnext50_32x4d", "torchvision", "cnn", tv("resnext50_32x4d"), images()),
    ZooModel("tv_mobilenet_v2", "torchvision", "cnn", tv("mobilenet_v2"), images()),
    ZooModel("tv_mobilenet_v3_large", "torchvision", "cnn", tv("mobilenet_v3_large"), images()),
    ZooModel("tv_efficientnet_b0", "torchvision", "cnn", tv("efficientnet_b0"), images()),
    ZooModel("tv_convnext_tiny", "torchvision", "cnn", tv("convnext_tiny"), images()),
    ZooModel("tv_regnet_y_400mf", "torchvision", "cnn", tv("regnet_y_400mf"), images()),
    ZooModel("tv_shufflenet_v2_x1_0", "torchvision", "cnn", tv("shufflenet_v2_x1_0"), images()),
    ZooModel("tv_densenet121", "torchvision", "cnn", tv("densenet121"), images()),
    ZooModel("tv_squeezenet1_1", "torchvision", "cnn", tv("squeezenet1_1"), images()),
    ZooModel("tv_mnasnet1_0", "torchvision", "cnn", tv("mnasnet1_0"), images()),
    ZooModel("tv_vit_b_16", "torchvision", "vit", tv("vit_b_16"), images()),
    ZooModel("tv_swin_t", "torchvision", "vit", tv("swin_t"), images()),
    # timm
    ZooModel("timm_resnet50d", "timm", "cnn", tm("resnet50d"), images()),
    ZooModel("timm_efficientnet_b2", "timm", "cnn", tm("efficientnet_b2"), images(256)),
    ZooModel("timm_mobilenetv3_large_100", "timm", "cnn", tm("mobilenetv3_large_100"), images()),
    ZooModel("timm_convnext_nano", "timm", "cnn", tm("convnext_nano"), images()),
    ZooModel("timm_regnety_008", "timm", "cnn", tm("regnety_008"), images()),
    ZooModel("timm_ghostnet_100", "timm", "cnn", tm("ghostnet_100"), images()),
    ZooModel("timm_deit_small", "timm", "vit", tm("deit_small_patch16_224"), images()),
    ZooModel("timm_swin_tiny", "timm", "vit", tm("swin_tiny_patch4_window7_224"), images()),
    ZooModel("timm_mixer_b16", "timm", "vit", tm("mixer_b16_224"), images()),
    ZooModel("timm_levit_128s", "timm", "vit", tm("levit_128s"), images()),
    # transformers
    ZooModel("hf_bert_base", "transformers", "encoder", hf("BertModel", "BertConfig"), tokens(VOCAB_BERT, 128, types=True)),
    ZooModel("hf_roberta_base", "transformers", "encoder", hf("RobertaModel", "RobertaConfig"), tokens(50265, 128)),
    ZooModel("hf_distilbert", "transformers", "encoder", hf("DistilBertModel", "DistilBertConfig"), tokens(VOCAB_BERT, 128)),
    ZooModel("hf_albert_base", "transformers", "encoder", hf("AlbertModel", "AlbertConfig", hidden_size=768, num_attention_heads=12, intermediate_size=3072), tokens(30000, 128)),
    ZooModel("hf_vit_base", "transformers", "vit", hf("ViTModel", "ViTConfig"), lambda b: ((), {"pixel_values": torch.randn(b, 3, 224, 224)})),
    ZooModel("hf_gpt2", "transformers", "decoder", hf("GPT2LMHeadModel", "GPT2Config"), tokens(VOCAB_GPT2, 128, mask=False)),
    ZooModel("hf_opt_125m", "transformers", "decoder", hf("OPTForCausalLM", "OPTConfig"), tokens(50272, 128)),
    ZooModel("hf_llama_small", "transformers", "decoder", hf(
        "LlamaForCausalLM", "LlamaConfig", hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
        num_key_value_heads=4, vocab_size=VOCAB_LLAMA), tokens(VOCAB_LLAMA, 128)),
    ZooModel("hf_mistral_small", "transformers", "decoder", hf(
        "MistralForCausalLM", "MistralConfig", hidden_size=1024, intermediate_size=3584, num_hidden_layers=8, num_attention_heads=16,
        num_key_value_heads=8, vocab_size=VOCAB_LLAMA, sliding_window=None), tokens(VOCAB_LLAMA, 128)),
    ZooModel("hf_qwen2_small", "transformers", "decoder", hf(
        "Qwen2ForCausalLM", "Qwen2Config", hidden_size=896, intermediate_size=4864, num_hidden_layers=8, num_attention_heads=14,
        num_key_value_heads=2, vocab_size=151936), tokens(151936, 128)),
    ZooModel("hf_t5_small", "transformers", "encdec", hf("T5ForConditionalGeneration", "T5Config"), seq2seq(32128, 128, 32)),
    ZooModel("hf_bart_base", "transformers", "encdec", hf("BartForConditionalGeneration", "BartConfig"), seq2seq(50265, 128, 32)),
    ZooModel("hf_whisper_tiny", "transformers", "encdec", hf(
        "WhisperForConditionalGeneration", "WhisperConfig", d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
        decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536),
        lambda b: ((), {"input_features": torch.randn(b, 80, 3000), "decoder_input_ids": torch.randint(0, 51865, (b, 32))})),
    # written by hand
    ZooModel("unet_small", "torch", "cnn", UNet, images(128)),
    ZooModel("tcn_conv1d", "torch", "other", TCN, lambda b: ((torch.randn(b, 80, 1000),), {}), dtypes=(torch.float32,)),
    ZooModel("video_conv3d", "torch", "cnn", Video3d, lambda b: ((torch.randn(b, 3, 16, 112, 112),), {}), batches=(1, 4)),
    ZooModel("clip_text_hand", "torch", "vit", TextBlock, lambda b: ((torch.randn(b, 77, 768),), {}), batches=(1, 64)),
    ZooModel("lstm_lm", "torch", "rnn", LSTMLM, lambda b: ((torch.randint(0, 10000, (b, 64)),), {})),
    ZooModel("gru_tagger", "torch", "rnn", GRUTagger, lambda b: ((torch.randn(b, 100, 64),), {})),
    ZooModel("mixer_mlp_hand", "torch", "mlp", MixerMLP, lambda b: ((torch.randn(b, 64, 256),), {})),
    ZooModel("separable_stack", "torch", "cnn", SeparableStack, images()),
    ZooModel("nn_transformer_encoder", "torch", "encoder", encoder_stack, lambda b: ((torch.randn(b, 128, 512),), {})),
    ZooModel("nn_multihead_attention", "torch", "encoder", MHA, lambda b: ((torch.randn(b, 256, 512),), {})),
]


def with_defaults(m: ZooModel) -> ZooModel:
    batches = m.batches or (1, TYPICAL_BATCH[m.family])
    dtypes = m.dtypes or ((torch.float32,) if m.family == "rnn" else (torch.float32, HALF[m.family]))
    return ZooModel(m.name, m.library, m.family, m.make, m.inputs, batches, dtypes)


MODELS = [with_defaults(m) for m in MODELS]


@functools.lru_cache(maxsize=None)
def available(library: str) -> bool:
    """Whether the library imports here (torch always does)."""
    if library == "torch":
        return True
    try:
        importlib.import_module(library)
        return True
    except Exception:  # noqa: BLE001 - a library that fails to import is as absent
        return False


def missing_reason(model: ZooModel) -> str | None:
    return None if available(model.library) else f"{model.library} is not installed here"


def cases(available_only: bool = True, models: list[ZooModel] | None = None) -> list[ZooCase]:
    """Every model (of the zoo, or ``models``) at batch 1 and its typical batch in its natural dtype,
    and at the typical batch in its half dtype; models of libraries not installed here are left out
    when ``available_only``."""
    out = []
    for m in MODELS if models is None else models:
        if available_only and not available(m.library):
            continue
        natural, *half = m.dtypes
        out += [ZooCase(m, b, natural) for b in m.batches]
        out += [ZooCase(m, m.batches[-1], d) for d in half]
    return out
