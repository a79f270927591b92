"""transformers' ViT-base/16 (12 layers, d 768, 224 x 224 images), random weights, batch 8.

Needs ``pip install transformers``. What the advisor should find: compute-bound GEMMs; the patch
embedding is a 16 x 16 stride-16 convolution; 197 tokens per image.
"""

import torch
from transformers import ViTConfig, ViTForImageClassification

model = ViTForImageClassification(ViTConfig())
example_inputs = (torch.randn(8, 3, 224, 224),)
