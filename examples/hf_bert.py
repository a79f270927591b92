"""transformers' BERT-base (12 layers, d 768), random weights, batch 8 of 128 tokens, called with
keyword inputs as tokenizers produce them (``input_ids``, ``attention_mask``, ``token_type_ids``).

Needs ``pip install transformers``. What the advisor should find: compute-bound GEMMs in fp32 (TF32
with ``--tf32``), memory-bound layer norms and GELUs; each residual add fuses into its LayerNorm
(GELU into its GEMM's epilogue is missed today, as in ``gpt_block.py``).
"""

import torch
from transformers import BertConfig, BertModel

model = BertModel(BertConfig())
ids = torch.randint(0, 30522, (8, 128))
example_inputs = {"input_ids": ids, "attention_mask": torch.ones(8, 128, dtype=torch.long), "token_type_ids": torch.zeros(8, 128, dtype=torch.long)}
