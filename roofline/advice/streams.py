"""Copies and streams (seed 004): a stream of independent batches, each copied in, computed and
copied out, run sequentially with pageable or pinned host memory, or overlapped on CUDA streams."""

from __future__ import annotations

from roofline.advice.placement import transfer_time_s
from roofline.model.device import DeviceModel
from roofline.schema.report import StreamPipeline


def stream_pipeline(dev: DeviceModel, compute_s: float, in_bytes: int, out_bytes: int, batches: int) -> StreamPipeline | None:
    """A stream of ``batches`` independent batches: copy in, compute, copy out.

    Sequential on one stream, each stage waits for the last: N x (in + compute + out). Pageable copies
    are staged through a bounce buffer by the host and cannot overlap anything. With pinned memory and
    one stream per stage the copy engines (one per direction) and the SMs work at once: after the
    pipeline fills, each batch costs only its slowest stage: sum + (N - 1) x max.
    """
    if dev.kind != "cuda" or not dev.part.measurements.transfers:
        return None
    stages = {}
    for mem in ("pageable", "pinned"):
        stages[mem] = (transfer_time_s(dev, in_bytes, "h2d", mem), compute_s, transfer_time_s(dev, out_bytes, "d2h", mem))
    seq_pageable = batches * sum(stages["pageable"])
    seq_pinned = batches * sum(stages["pinned"])
    pinned = stages["pinned"]
    overlapped = sum(pinned) + (batches - 1) * max(pinned)
    return StreamPipeline(
        batches=batches, h2d_pageable_s=stages["pageable"][0], h2d_pinned_s=pinned[0], compute_s=compute_s,
        d2h_pageable_s=stages["pageable"][2], d2h_pinned_s=pinned[2],
        sequential_pageable_s=seq_pageable, sequential_pinned_s=seq_pinned, streams_pinned_s=overlapped,
        pinned_gain=seq_pageable / seq_pinned if seq_pinned else None,
        streams_gain=seq_pinned / overlapped if overlapped else None,
    )
