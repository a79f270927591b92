"""A GPT-2 vocabulary head on its own: 2048 tokens of width 768 projected onto 50257 logits in fp16,
the largest GEMM of a GPT-2 forward at that length (2048 x 768 @ 768 x 50257).

What the advisor should find: 50257 is not a multiple of 8, so cuBLAS runs a slow unaligned kernel;
padding the vocabulary to 50304 (a multiple of 64) cuts the GEMM's predicted time severalfold
(the H100 measured 1.88 ms against 0.23 ms, benchmarks/RESULTS.md, "Padding"). The logits stay on
the device in a sampling loop, so run it with `--calls 100 --copies once`; per call with copies, the
201 MB of logits copied back would make the CPU the better place.
"""

import torch

VOCAB, WIDTH, TOKENS = 50257, 768, 2048


def get_model():
    return torch.nn.Linear(WIDTH, VOCAB, bias=False).to(torch.float16)


def get_example_inputs():
    return (torch.randn(1, TOKENS, WIDTH, dtype=torch.float16),)


def sweep():
    """The head over the number of tokens, for `--placement-sweep`."""
    for tokens in (16, 128, 2048):
        yield f"tokens={tokens}", get_model(), (torch.randn(1, tokens, WIDTH, dtype=torch.float16),)
