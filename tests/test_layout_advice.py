"""Layout advice: a convolution whose channels-last input sends cuDNN to a loop over groups, priced
again on an NCHW input (the copy into it paid) with the same model of time."""

import torch
from torch import nn

from roofline.advice.layout import layout_line
from roofline.pipeline import Analysis, Options
from tests.conftest import shipped_h100

_h100 = shipped_h100  # read once (tests/conftest.py)


class TokenPool(nn.Module):
    """PiT's pooling: tokens reshaped into a grid (channels-last strides), a depthwise convolution of
    multiplier 2 and stride 2, then an MLP whose GEMMs keep the GPU the better device."""

    def __init__(self, channels: int = 288):
        super().__init__()
        self.pool = nn.Conv2d(channels, 2 * channels, 3, 2, 1, groups=channels)
        self.proj = nn.Sequential(nn.Linear(2 * channels, 4096), nn.Linear(4096, 2 * channels))

    def forward(self, tokens):
        b, n, c = tokens.shape
        side = int(n**0.5)
        grid = tokens.transpose(1, 2).reshape(b, c, side, side)
        if self.nchw:
            grid = grid.contiguous()
        return self.proj(self.pool(grid).flatten(2).transpose(1, 2)).mean(1)

    nchw = False


def _report(nchw: bool, dtype=torch.float16, device="cuda"):
    model = TokenPool().to(dtype).eval()
    model.nchw = nchw
    x = torch.empty(32, 196, 288, dtype=dtype)
    options = Options(device=device, capture_device="cpu", batch_sweep=False, copies_per_call=False)
    return Analysis.of(model, (x,), None, _h100(), options, name="token_pool").report()


def test_an_nchw_input_is_advised_where_cudnn_loops_over_groups():
    report = _report(nchw=False)
    assert [(e.module, e.convs) for e in report.layout] == [("pool", 1)]
    entry = report.layout[0]
    # 288 launches against ATen's one kernel and the copy into NCHW
    assert entry.before_s > 10 * entry.after_s
    nchw = _report(nchw=True)
    assert nchw.total.predicted_s < report.total.predicted_s - 0.5 * (entry.before_s - entry.after_s)  # as the twin priced it
    assert report.recommended_plan.device == "cuda" and layout_line(entry) in report.advice
    assert layout_line(entry).startswith("make the input of pool NCHW (x.contiguous()), 1 convolution cuDNN runs a group at a time channels-last: ")


def test_no_layout_advice_where_none_loops():
    assert _report(nchw=True).layout == []  # the NCHW grid: ATen's kernel already
    assert _report(nchw=False, dtype=torch.float32).layout == []  # float32: cuDNN's one generic kernel
    assert _report(nchw=False, device="cpu").layout == []
