"""Advice from the model of time: each piece predicts a whole alternative (another device, fused
kernels, compiled or graphed execution, another batch, copies on streams) with the same model that
prices the eager run, so its gain is as good as the predictions it rests on and can be checked with
``--measure``."""
