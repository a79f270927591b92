"""A second zoo the model of time is never tuned on: library models that are not in the accuracy
zoo (``registry.MODELS``), built the same way (random weights, each at batch 1 and a typical batch,
natural dtype and half precision).

    python benchmarks/accuracy.py --zoo --heldout --profile P --json OUT.json     (then --replay OUT.json)

A change to the model of time is judged on the zoo; this set says how far that judgement carries to
models nobody looked at while making it. It names other architectures than the zoo's where it can
(VGG, Inception, MaxViT, DLA, HRNet, PoolFormer, MobileViT, CaiT, DeBERTa, MobileBERT, GPT-Neo, Phi,
Gemma, Falcon, BLOOM, mBART, wav2vec 2.0, SegFormer, CLIP) and other sizes of the zoo's families
(ResNet-34, Wide ResNet, EfficientNetV2, RegNetX, MobileNetV3-small).

``FRESH`` is a third set of models the model of time was not judged on (``--fresh``): AlexNet, a
3-d ResNet, Swin V2, RegNetY, ResNeSt, NFNet, CSPDarknet, ConvMixer, CoaT, XCiT, FastViT,
EfficientFormer, VOLO, SqueezeBERT, Funnel and GPT-BigCode; ``FOURTH`` a fourth (``--fourth``):
two more RegNets, ViT-B/32, ResNet-101, SE-ResNeXt, DPN, SKNet, BEiT, MPNet, GPT-NeoX, Phi-3 and
DINOv2; ``FIFTH`` a fifth (``--fifth``), chosen for mechanisms the other sets lack: FNet's Fourier
transforms, ConvBERT's span-based dynamic convolutions, HuBERT's convolutional feature encoder, ViT-MAE's
random masking, a Mixtral-shaped mixture of experts, Pegasus, XLNet's relative attention, DeepLabV3's
dilated convolutions, R(2+1)D's factorised 3-d convolutions, Res2Net, VoVNet, EfficientViT's linear
attention, PVT v2, Twins and ConvNeXt V2, beside other sizes of the zoo's families (EfficientNet-B3,
ShuffleNet V2 x2.0, ConvNeXt-S).
"""

from __future__ import annotations

import torch

from benchmarks.zoo.registry import VOCAB_BERT, ZooCase, ZooModel, cases, hf, images, seq2seq, tm, tokens, tv, with_defaults

HELDOUT: list[ZooModel] = [
    # torchvision
    ZooModel("tv_resnet34", "torchvision", "cnn", tv("resnet34"), images()),
    ZooModel("tv_wide_resnet50_2", "torchvision", "cnn", tv("wide_resnet50_2"), images()),
    ZooModel("tv_vgg11_bn", "torchvision", "cnn", tv("vgg11_bn"), images()),
    ZooModel("tv_googlenet", "torchvision", "cnn", tv("googlenet", init_weights=False, aux_logits=False), images()),
    ZooModel("tv_inception_v3", "torchvision", "cnn", tv("inception_v3", init_weights=False, aux_logits=False), images(299)),
    ZooModel("tv_efficientnet_v2_s", "torchvision", "cnn", tv("efficientnet_v2_s"), images(384)),
    ZooModel("tv_regnet_x_1_6gf", "torchvision", "cnn", tv("regnet_x_1_6gf"), images()),
    ZooModel("tv_mobilenet_v3_small", "torchvision", "cnn", tv("mobilenet_v3_small"), images()),
    ZooModel("tv_maxvit_t", "torchvision", "vit", tv("maxvit_t"), images()),
    ZooModel("tv_fcn_resnet50", "torchvision", "cnn", tv("segmentation.fcn_resnet50", weights_backbone=None, aux_loss=False), images(256)),
    # timm
    ZooModel("timm_dla34", "timm", "cnn", tm("dla34"), images()),
    ZooModel("timm_hrnet_w18_small", "timm", "cnn", tm("hrnet_w18_small"), images()),
    ZooModel("timm_rexnet_100", "timm", "cnn", tm("rexnet_100"), images()),
    ZooModel("timm_mixnet_s", "timm", "cnn", tm("mixnet_s"), images()),
    ZooModel("timm_repvgg_a2", "timm", "cnn", tm("repvgg_a2"), images()),
    ZooModel("timm_poolformer_s12", "timm", "vit", tm("poolformer_s12"), images()),
    ZooModel("timm_mobilevit_s", "timm", "vit", tm("mobilevit_s"), images(256)),
    ZooModel("timm_cait_xxs24", "timm", "vit", tm("cait_xxs24_224"), images()),
    ZooModel("timm_pit_s", "timm", "vit", tm("pit_s_224"), images()),
    ZooModel("timm_edgenext_small", "timm", "vit", tm("edgenext_small"), images(256)),
    # transformers
    ZooModel("hf_electra_small", "transformers", "encoder", hf("ElectraModel", "ElectraConfig"), tokens(VOCAB_BERT, 128, types=True)),
    ZooModel("hf_deberta_v2_base", "transformers", "encoder", hf(
        "DebertaV2Model", "DebertaV2Config", hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072), tokens(128100, 128)),
    ZooModel("hf_mobilebert", "transformers", "encoder", hf("MobileBertModel", "MobileBertConfig"), tokens(VOCAB_BERT, 128)),
    ZooModel("hf_gpt_neo_125m", "transformers", "decoder", hf(
        "GPTNeoForCausalLM", "GPTNeoConfig", hidden_size=768, num_layers=12, num_heads=12, attention_types=[[["global", "local"], 6]]),
        tokens(50257, 128)),
    ZooModel("hf_phi_small", "transformers", "decoder", hf(
        "PhiForCausalLM", "PhiConfig", hidden_size=1024, intermediate_size=4096, num_hidden_layers=8, num_attention_heads=16), tokens(51200, 128)),
    ZooModel("hf_gemma_small", "transformers", "decoder", hf(
        "GemmaForCausalLM", "GemmaConfig", hidden_size=1024, intermediate_size=4096, num_hidden_layers=8, num_attention_heads=8,
        num_key_value_heads=1, head_dim=128), tokens(256000, 128)),
    ZooModel("hf_falcon_small", "transformers", "decoder", hf(
        "FalconForCausalLM", "FalconConfig", hidden_size=1024, num_hidden_layers=8, num_attention_heads=16), tokens(65024, 128)),
    ZooModel("hf_bloom_small", "transformers", "decoder", hf("BloomForCausalLM", "BloomConfig", hidden_size=1024, n_layer=8, n_head=16),
             tokens(250880, 128)),
    ZooModel("hf_mbart_base", "transformers", "encdec", hf(
        "MBartForConditionalGeneration", "MBartConfig", d_model=768, encoder_layers=6, decoder_layers=6, encoder_attention_heads=12,
        decoder_attention_heads=12, encoder_ffn_dim=3072, decoder_ffn_dim=3072), seq2seq(50265, 128, 32)),
    ZooModel("hf_wav2vec2_base", "transformers", "encoder", hf("Wav2Vec2Model", "Wav2Vec2Config"),
             lambda b: ((), {"input_values": torch.randn(b, 16000)})),
    ZooModel("hf_segformer_b0", "transformers", "vit", hf("SegformerForSemanticSegmentation", "SegformerConfig"),
             lambda b: ((), {"pixel_values": torch.randn(b, 3, 512, 512)})),
    ZooModel("hf_clip_vision", "transformers", "vit", hf("CLIPVisionModel", "CLIPVisionConfig"),
             lambda b: ((), {"pixel_values": torch.randn(b, 3, 224, 224)})),
]
HELDOUT = [with_defaults(m) for m in HELDOUT]

FRESH: list[ZooModel] = [
    # torchvision
    ZooModel("tv_alexnet", "torchvision", "cnn", tv("alexnet"), images()),
    ZooModel("tv_r3d_18", "torchvision", "cnn", tv("video.r3d_18"), lambda b: ((torch.randn(b, 3, 16, 112, 112),), {}), batches=(1, 8)),
    ZooModel("tv_swin_v2_t", "torchvision", "vit", tv("swin_v2_t"), images(256)),
    ZooModel("tv_regnet_y_1_6gf", "torchvision", "cnn", tv("regnet_y_1_6gf"), images()),
    # timm
    ZooModel("timm_resnest14d", "timm", "cnn", tm("resnest14d"), images()),
    ZooModel("timm_nfnet_l0", "timm", "cnn", tm("nfnet_l0"), images()),
    ZooModel("timm_cspdarknet53", "timm", "cnn", tm("cspdarknet53"), images(256)),
    ZooModel("timm_convmixer_768_32", "timm", "cnn", tm("convmixer_768_32"), images()),
    ZooModel("timm_coat_lite_tiny", "timm", "vit", tm("coat_lite_tiny"), images()),
    ZooModel("timm_xcit_tiny_12", "timm", "vit", tm("xcit_tiny_12_p16_224"), images()),
    ZooModel("timm_fastvit_t8", "timm", "vit", tm("fastvit_t8"), images(256)),
    ZooModel("timm_efficientformer_l1", "timm", "vit", tm("efficientformer_l1"), images()),
    ZooModel("timm_volo_d1", "timm", "vit", tm("volo_d1_224"), images()),
    # transformers
    ZooModel("hf_squeezebert", "transformers", "encoder", hf("SqueezeBertModel", "SqueezeBertConfig"), tokens(30528, 128)),
    ZooModel("hf_funnel_small", "transformers", "encoder", hf("FunnelModel", "FunnelConfig", block_sizes=[2, 2, 2], d_model=512, n_head=8,
                                                              d_inner=2048), tokens(30522, 128)),
    ZooModel("hf_gpt_bigcode_small", "transformers", "decoder", hf(
        "GPTBigCodeForCausalLM", "GPTBigCodeConfig", n_embd=768, n_layer=12, n_head=12, multi_query=True), tokens(49152, 128)),
]
FRESH = [with_defaults(m) for m in FRESH]

FOURTH: list[ZooModel] = [
    # torchvision
    ZooModel("tv_regnet_x_400mf", "torchvision", "cnn", tv("regnet_x_400mf"), images()),
    ZooModel("tv_regnet_y_3_2gf", "torchvision", "cnn", tv("regnet_y_3_2gf"), images()),
    ZooModel("tv_vit_b_32", "torchvision", "vit", tv("vit_b_32"), images()),
    ZooModel("tv_resnet101", "torchvision", "cnn", tv("resnet101"), images()),
    # timm
    ZooModel("timm_seresnext26d_32x4d", "timm", "cnn", tm("seresnext26d_32x4d"), images()),
    ZooModel("timm_dpn68", "timm", "cnn", tm("dpn68"), images()),
    ZooModel("timm_skresnet18", "timm", "cnn", tm("skresnet18"), images()),
    ZooModel("timm_beit_base", "timm", "vit", tm("beit_base_patch16_224"), images()),
    # transformers
    ZooModel("hf_mpnet_base", "transformers", "encoder", hf("MPNetModel", "MPNetConfig"), tokens(30527, 128)),
    ZooModel("hf_gpt_neox_small", "transformers", "decoder", hf(
        "GPTNeoXForCausalLM", "GPTNeoXConfig", hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
        vocab_size=50304), tokens(50304, 128)),
    ZooModel("hf_phi3_small", "transformers", "decoder", hf(
        "Phi3ForCausalLM", "Phi3Config", hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
        num_key_value_heads=4, vocab_size=32064, pad_token_id=0), tokens(32064, 128)),
    ZooModel("hf_dinov2_base", "transformers", "vit", hf("Dinov2Model", "Dinov2Config"),
             lambda b: ((), {"pixel_values": torch.randn(b, 3, 224, 224)})),
]
FOURTH = [with_defaults(m) for m in FOURTH]

FIFTH: list[ZooModel] = [
    # torchvision
    ZooModel("tv_efficientnet_b3", "torchvision", "cnn", tv("efficientnet_b3"), images(300)),
    ZooModel("tv_shufflenet_v2_x2_0", "torchvision", "cnn", tv("shufflenet_v2_x2_0"), images()),
    ZooModel("tv_convnext_small", "torchvision", "cnn", tv("convnext_small"), images()),
    ZooModel("tv_deeplabv3_mobilenet_v3", "torchvision", "cnn", tv("segmentation.deeplabv3_mobilenet_v3_large", weights_backbone=None,
                                                                  aux_loss=False), images(320), batches=(1, 8)),
    ZooModel("tv_r2plus1d_18", "torchvision", "cnn", tv("video.r2plus1d_18"), lambda b: ((torch.randn(b, 3, 16, 112, 112),), {}),
             batches=(1, 8)),
    # timm
    ZooModel("timm_res2net50_14w_8s", "timm", "cnn", tm("res2net50_14w_8s"), images()),
    ZooModel("timm_ese_vovnet19b_dw", "timm", "cnn", tm("ese_vovnet19b_dw"), images()),
    ZooModel("timm_convnextv2_atto", "timm", "cnn", tm("convnextv2_atto"), images()),
    ZooModel("timm_efficientvit_b0", "timm", "vit", tm("efficientvit_b0"), images()),
    ZooModel("timm_pvt_v2_b0", "timm", "vit", tm("pvt_v2_b0"), images()),
    ZooModel("timm_twins_svt_small", "timm", "vit", tm("twins_svt_small"), images()),
    # transformers
    ZooModel("hf_fnet_base", "transformers", "encoder", hf("FNetModel", "FNetConfig"), tokens(32000, 128, mask=False),
             dtypes=(torch.float32,)),  # cuFFT takes half precision only at power-of-two lengths
    ZooModel("hf_convbert_base", "transformers", "encoder", hf("ConvBertModel", "ConvBertConfig"), tokens(30522, 128)),
    ZooModel("hf_xlnet_base", "transformers", "encoder", hf("XLNetModel", "XLNetConfig", d_model=768, n_layer=12, n_head=12, d_inner=3072),
             tokens(32000, 128)),
    ZooModel("hf_hubert_base", "transformers", "encoder", hf("HubertModel", "HubertConfig"),
             lambda b: ((), {"input_values": torch.randn(b, 16000)})),
    ZooModel("hf_vit_mae_base", "transformers", "vit", hf("ViTMAEModel", "ViTMAEConfig"),
             lambda b: ((), {"pixel_values": torch.randn(b, 3, 224, 224)})),
    ZooModel("hf_mixtral_small", "transformers", "decoder", hf(
        "MixtralForCausalLM", "MixtralConfig", hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=2, num_local_experts=8, num_experts_per_tok=2, vocab_size=32000), tokens(32000, 128),
        dtypes=(torch.bfloat16,)),  # its experts run torch's grouped GEMM, which takes bfloat16 only
    ZooModel("hf_pegasus_small", "transformers", "encdec", hf(
        "PegasusForConditionalGeneration", "PegasusConfig", d_model=512, encoder_layers=6, decoder_layers=6, encoder_attention_heads=8,
        decoder_attention_heads=8, encoder_ffn_dim=2048, decoder_ffn_dim=2048), seq2seq(50265, 128, 32)),
]
FIFTH = [with_defaults(m) for m in FIFTH]


def heldout_cases(available_only: bool = True, models: list[ZooModel] = HELDOUT) -> list[ZooCase]:
    """Every held-out model's cases (``models``: HELDOUT, FRESH, FOURTH or FIFTH), as ``registry.cases`` makes the zoo's."""
    return cases(available_only, models)
