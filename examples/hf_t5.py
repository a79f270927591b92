"""transformers' T5-small (6 + 6 layers, d 512), random weights: an encoder-decoder called with
keyword inputs, 128 source tokens and 32 decoder tokens (``input_ids``, ``decoder_input_ids``).

Needs ``pip install transformers``. What the advisor should find: at these sizes an overhead-bound
forward on an H100 (~960 small ops, explicit attention matmuls with a relative position bias).
"""

import torch
from transformers import T5Config, T5ForConditionalGeneration

model = T5ForConditionalGeneration(T5Config())
example_inputs = {"input_ids": torch.randint(0, 32128, (1, 128)), "decoder_input_ids": torch.randint(0, 32128, (1, 32))}
