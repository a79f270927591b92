"""``nn.TransformerEncoder`` (4 layers, d 512, 8 heads, FFN 2048, batch_first) in eval under no_grad:
PyTorch runs each layer as one fused native op (``aten._transformer_encoder_layer_fwd``, its
inference fast path), which roofline captures as it runs and prices kernel by kernel.

What the advisor should find: compute-bound at batch 4 x 128 tokens; 4 ops, each ~12 kernels.
"""

import torch
from torch import nn

layer = nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
model = nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
example_inputs = (torch.randn(4, 128, 512),)
