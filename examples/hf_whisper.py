"""transformers' Whisper-tiny shape (4 + 4 layers, d 384, 6 heads), random weights: 30 s of 80-bin
log-mel features through the encoder (two 1-D convolutions, 1500 positions) and 8 decoder tokens.

Needs ``pip install transformers``. What the advisor should find: the encoder's kernels (its attention
over 1500 positions first) are most of the device time; the decoder (8 tokens, some 350 ops) is
overhead-bound and most of the eager time, which is mostly host overhead on an H100.
"""

import torch
from transformers import WhisperConfig, WhisperForConditionalGeneration

config = WhisperConfig(
    d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6, decoder_attention_heads=6,
    encoder_ffn_dim=1536, decoder_ffn_dim=1536,
)
model = WhisperForConditionalGeneration(config)
example_inputs = {"input_features": torch.randn(1, 80, 3000), "decoder_input_ids": torch.randint(0, 51865, (1, 8))}
