"""An int64 matrix product: the CPU runs it, CUDA has no integer GEMM (torch raises
NotImplementedError). The plan check expects every GPU plan ruled out and the GPU to refuse it."""

import torch


class IntMatmul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def get_model():
    return IntMatmul()


def get_example_inputs():
    return (torch.randint(0, 9, (256, 256)), torch.randint(0, 9, (256, 256)))
