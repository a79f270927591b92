"""transformers' Llama at a 1B-class shape (16 layers, d 2048, 32 query heads sharing 8 key/value
heads, SwiGLU MLP 8192, RMSNorm, rotary embeddings, vocabulary 128256), random weights, bf16, a
prompt of 128 tokens with the default KV cache.

Needs ``pip install transformers``. What the advisor should find: at 128 tokens the eager forward is
almost all host overhead (some 1300 aten ops; a CUDA graph about 5x faster), the vocabulary head
the largest op; grouped-query attention reads K and V once per key/value head (SDPA over 8 key/value
heads).
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(
    hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
    vocab_size=128256, max_position_embeddings=4096,
)
model = LlamaForCausalLM(config).to(torch.bfloat16)
example_inputs = (torch.randint(0, 128256, (1, 128)),)
