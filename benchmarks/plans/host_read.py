"""A model that reads a tensor value into Python (`if y.sum().item() > 0`): the host waits for the
GPU there, and a CUDA graph cannot capture it. The plan check expects the advisor to rule out CUDA
graphs and reduce-overhead for it, and the GPU to refuse their capture."""

import torch


class HostRead(torch.nn.Module):
    def __init__(self, d: int = 512):
        super().__init__()
        self.a = torch.nn.Linear(d, d)
        self.b = torch.nn.Linear(d, d)

    def forward(self, x):
        y = self.a(x)
        if y.sum().item() > 0:
            y = torch.relu(y)
        return self.b(y)


def get_model():
    return HostRead()


def get_example_inputs():
    return (torch.ones(8, 512),)
