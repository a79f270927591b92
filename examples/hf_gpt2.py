"""transformers' GPT-2 (124 M parameters, ``GPT2LMHeadModel(GPT2Config())``), random weights, a
prompt of 32 tokens, with the model's default KV cache (``use_cache``): the cache comes back in the
output as a ``DynamicCache``.

Needs ``pip install transformers`` (or ``pip install 'roofline[hf]'``). What the advisor should
find: at batch 1 and 32 tokens an overhead-bound forward on an H100 (a few GFLOP over ~500 ops);
the vocabulary head (768 x 50257) is the largest GEMM, and 50257 is not a multiple of 8.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

model = GPT2LMHeadModel(GPT2Config())
example_inputs = (torch.randint(0, 50257, (1, 32)),)
