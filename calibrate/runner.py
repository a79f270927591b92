"""Runs the micro-benchmarks for one machine and assembles a validated ``DeviceProfile``.

The plan (which sizes, how long each point may take) is the only thing ``--quick`` changes; every
measurement goes through ``roofline.timing`` and every result through the profile schema.
"""

from __future__ import annotations

import platform
import re
import socket
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import torch

from calibrate import compiled, conv, load, matmul, mechanisms, memory, overhead, peaks, prefetch, rnn, transfer
from roofline import __version__
from roofline.errors import DeviceNotAvailable
from roofline.hostmix import mix_alone_sum_s, mix_of, representative_ops
from roofline.machine import cpu_identity, gpu_identity
from roofline.measure.host_speed import INDEX_WARM_PASSES, alone_sample_s, index_sample_s
from roofline.model.host import eager_chain_kernel_s, scaled_stat
from roofline.profile_checks import Problem, check_part
from roofline.schema.profile import (
    BandwidthCurve,
    CalibrationInfo,
    CpuPart,
    DeviceProfile,
    GpuPart,
    Measurements,
    Overheads,
    PointwiseCurve,
)
from roofline.timing import Tally
from roofline.units import count

POINTWISE_OPS = ("sin", "unary", "add", "mul_broadcast", "layer_norm", "softmax")


# The host CPU's bf16 GEMM grid on a GPU machine: there the CPU curves only decide placement, for
# which three sizes serve (docs/design.md, "Calibration")
CPU_HALF_GRID_BESIDE_GPU = [1, 128, 1024]

# float16's GEMM cube derived from bfloat16's where a dozen check shapes agree (calibrate.matmul.twin_curve):
# the same tensor-core kernels, a tenth of the cube's calibration time (docs/design.md, "Calibration")
GPU_MATMUL_TWINS = {"float16": "bfloat16"}

QUICK_FAMILY_TOP = 1 << 24  # elements: the largest op-family point of a quick CPU plan (64 MiB of float32)

TRAINING_HOST_ROUNDS = 3  # rounds of roofline.measure.training_host in a full calibration
HOST_INDEX_SAMPLES = 3  # host-speed index samples before and after the overheads stage (each ~8 ms on the lent H100's host)


# (dtype, head_dim, causal) of the attention curves a GPU calibration measures
ATTENTION_CURVES = [(d, h, c) for d in ("bfloat16",) for h in (64, 128) for c in (False, True)] + [("float32", h, False) for h in (32, 64)]


@dataclass
class Plan:
    """Sizes and time budgets for one device."""

    matmul_dtypes: list[str]
    matmul_grid: list[int]
    matmul_probes: list[tuple[int, int, int]]
    bandwidth_sizes: list[int]
    sin_sizes: list[int]
    transfer_sizes: list[int] = field(default_factory=list)
    point_budget_s: float = 0.02
    overhead_budget_s: float = 0.05
    probe_dtypes: list[str] | None = None  # dtypes that get the peak probes (None: all)
    compiled_overheads: bool = False  # measure torch.compile's host costs (GPU, full plan)
    attention_seqs: list[int] = field(default_factory=list)  # GPU: SDPA sequence lengths
    attention_tokens: list[int] = field(default_factory=list)  # GPU: batch*heads*seq in flight
    conv_dtypes: list[str] = field(default_factory=list)
    pointwise_dtypes: list[str] = field(default_factory=lambda: ["float32"])
    conv_shapes: list[tuple] = field(default_factory=list)  # calibrate.conv.ConvShape
    conv_keyed: bool = False  # the conv shapes span kind, taps, stride and alignment (roofline.model.curves.ConvKey)
    conv_half_shapes: list[tuple] = field(default_factory=list)  # more, for half precision only (keys only it has)
    rnn_dtypes: list[str] = field(default_factory=list)
    rnn_shapes: list[tuple[int, int]] = field(default_factory=list)  # (batch, hidden)
    selection_max_elements: int | None = None  # the largest selection/layout family point (CPU: a sort of 2^24 takes seconds)
    mechanisms: bool = False  # GPU: depthwise/grouped convolutions, misaligned GEMMs, addmm (calibrate.mechanisms)
    quick: bool = False
    matmul_grids: dict[str, list[int]] = field(default_factory=dict)  # a dtype's own grid, where not ``matmul_grid``
    matmul_twins: dict[str, str] = field(default_factory=dict)  # dtype -> the dtype its cube may be derived from (calibrate.matmul.twin_curve)

    def conv_shapes_for(self, dtype: str) -> list[tuple]:
        return self.conv_shapes + (self.conv_half_shapes if dtype in ("float16", "bfloat16") else [])

    def grid_for(self, dtype: str) -> list[int]:
        return self.matmul_grids.get(dtype, self.matmul_grid)

    def probes_for(self, dtype: str) -> list[tuple[int, int, int]]:
        return self.matmul_probes if self.probe_dtypes is None or dtype in self.probe_dtypes else []

    def selection_sizes(self) -> list[int]:
        """Sizes of the selection and layout families: every other pointwise size, up to the cap."""
        return [x for x in self.sin_sizes[::2] if self.selection_max_elements is None or x <= self.selection_max_elements]

    def family_sizes(self, op: str) -> list[int]:
        """Sizes of one selection-family op: the selection sizes, or the strided ones (x4 apart) for
        the families whose time bends between points x16 apart (``memory.DENSE_SELECTION_OPS``)."""
        if op in memory.DENSE_SELECTION_OPS:  # resamplings of at least one channel
            return [x for x in self.strided_sizes() if x >= memory.UPSAMPLE_SIDE**2]
        return self.selection_sizes()

    def strided_sizes(self) -> list[int]:
        """Sizes of the layout and strided-copy families: the pointwise sizes (x4 apart) up to the
        largest selection point. Their ops in models lie in the millions of elements, where the cache
        ends: points x16 apart interpolate far from both sides of it."""
        selection = self.selection_sizes()
        return [x for x in self.sin_sizes if selection and x <= max(selection)]

    def steps(self, gpu: bool) -> int:
        n = sum(len(self.grid_for(d)) ** 3 + len(self.probes_for(d)) for d in self.matmul_dtypes)
        n += 3 * len(self.bandwidth_sizes) + len(POINTWISE_OPS) * len(self.pointwise_dtypes) * len(self.sin_sizes) + len(representative_ops("cpu")) + 2
        n += sum(len(self.family_sizes(op)) for op in (*memory.SELECTION_OPS, *(memory.GPU_SELECTION_OPS if gpu else ())))
        n += (len(memory.LAYOUT_OPS) + len(memory.STRIDED_OPS) + (len(memory.REDUCTION_FAMILIES) if gpu else 0)) * len(self.pointwise_dtypes) * len(self.strided_sizes())
        n += len(ATTENTION_CURVES) * len(self.attention_seqs) * (len(self.attention_tokens) + (0 if self.quick else 1))
        n += sum(len(self.conv_shapes_for(d)) for d in self.conv_dtypes)
        n += len(rnn.KINDS) * len(self.rnn_dtypes) * len(self.rnn_shapes)
        if gpu:
            n += 4 * len(self.transfer_sizes) + len(memory.CAT_GRID_BYTES[1::2] if self.quick else memory.CAT_GRID_BYTES)
            n += len(memory.GATHER_ROWS[1:3] if self.quick else memory.GATHER_ROWS)
            n += mechanisms.steps(self.quick) + mechanisms.norm_steps(self.quick) + 3 if self.mechanisms else 0  # 3: the foreach kernels
        elif not self.quick:
            n += 2 * len(mechanisms.BATCH_NORM_TRAIN_SHAPES) + len(conv.CPU_PASS_SHAPES)
        return n


def _geometric(lo: int, hi: int, factor: int) -> list[int]:
    out, x = [], lo
    while x <= hi:
        out.append(x)
        x *= factor
    return out


def cpu_plan(ident, quick: bool, beside_gpu: bool = False) -> Plan:
    """The host CPU's plan. ``beside_gpu``: the CPU of a GPU machine, whose curves serve placement
    (CPU or GPU for a model) and the host's own ops: its half-precision GEMMs get a coarser grid
    (``CPU_HALF_GRID_BESIDE_GPU``)."""
    dtypes = ["float32"] + (["bfloat16"] if {"amx_bf16", "avx512_bf16"} & set(ident.isa) else [])
    llc = ident.l3_cache_bytes or 32 << 20
    ram = ident.memory_bytes or 8 << 30
    # Three working sets beyond the last-level cache, from twice it to four times (at most 1 GiB and
    # an eighth of memory): the DRAM figure is their median, and a larger buffer streams at the same
    # rate. The op-family curves end beyond 1.5x the cache, so that large ops are priced at DRAM rates.
    top = min(4 * llc, max(ram // 8, 2 * llc), 1 << 30)
    lo = min(2 * llc, top // 2)
    beyond = sorted({lo, int((lo * top) ** 0.5), top})
    family_top = next(n for n in _geometric(1 << 10, 1 << 40, 4) if 8 * n >= 1.5 * llc)  # sin moves 8 bytes per element
    if quick:
        # seconds, not a minute, whatever cache the CPU reports (a VM may report its host's 480 MiB L3):
        # op families up to QUICK_FAMILY_TOP elements (the DRAM figure keeps its three working sets
        # beyond the cache: profile_checks takes their median)
        return Plan(
            matmul_dtypes=dtypes,
            matmul_grid=[1, 64, 512],
            matmul_probes=[],
            bandwidth_sizes=[s for s in _geometric(1 << 14, llc, 16) if s < beyond[0]] + beyond,
            sin_sizes=sorted({*_geometric(1 << 10, 1 << 22, 64), min(family_top, QUICK_FAMILY_TOP)}),
            point_budget_s=0.01,
            overhead_budget_s=0.02,
            conv_dtypes=["float32"],
            conv_shapes=conv.CPU_SHAPES_QUICK,
            quick=True,
        )
    # x4 steps up to the last-level cache, then the DRAM-sized points above (the calibration time
    # goes to these sizes)
    sizes = [s for s in _geometric(1 << 12, llc, 4) if s < beyond[0]] + beyond
    return Plan(
        matmul_dtypes=dtypes,
        # no 16: between 1 and 128 rows the CPU's GEMM time interpolates in log space
        matmul_grid=[1, 128, 512, 1024],
        matmul_grids={"bfloat16": CPU_HALF_GRID_BESIDE_GPU} if beside_gpu else {},
        matmul_probes=[(2048, 2048, 2048)],
        bandwidth_sizes=sizes,
        sin_sizes=sorted({*_geometric(1 << 10, 1 << 24, 4), family_top}),
        selection_max_elements=1 << 20,
        point_budget_s=0.03,
        overhead_budget_s=0.05,
        conv_dtypes=["float32"],
        conv_shapes=conv.CPU_SHAPES,
    )


def measure_pooling(plan: Plan, device: str, *, budget_s: float, warnings: list, progress=None) -> list:
    """The GPU's pooling and resampling families (``memory.GPU_SELECTION_OPS``), float32 over their sizes."""
    return [memory.measure_pointwise(plan.family_sizes(op), device, op=op, dtype_name="float32", budget_s=budget_s, warnings=warnings, progress=progress)
            for op in memory.GPU_SELECTION_OPS]


def gpu_plan(quick: bool, memory_bytes: int) -> Plan:
    dtypes = ["float32", "tf32", "bfloat16", "float16"]
    top = min(4 << 30, memory_bytes // 8)
    if quick:
        return Plan(
            matmul_dtypes=dtypes,
            matmul_grid=[1, 128, 1024, 8192],
            matmul_probes=[],
            bandwidth_sizes=_geometric(1 << 12, top, 16),
            sin_sizes=_geometric(1 << 10, 1 << 28, 16),
            transfer_sizes=_geometric(1 << 10, 1 << 26, 16),
            point_budget_s=0.01,
            overhead_budget_s=0.02,
            attention_seqs=[512, 4096],
            attention_tokens=[65536],
            conv_dtypes=["float32", "bfloat16"],
            conv_shapes=conv.GPU_SHAPES_QUICK,
            conv_keyed=True,
            pointwise_dtypes=["float32", "bfloat16"],
            rnn_dtypes=["float32"],
            rnn_shapes=rnn.GPU_SHAPES_QUICK,
            mechanisms=True,
            quick=True,
            matmul_twins=dict(GPU_MATMUL_TWINS),
        )
    return Plan(
        matmul_dtypes=dtypes,
        # 2048 dropped: replaying the H100 zoo without it left every figure within 0.5 points
        matmul_grid=[1, 64, 256, 1024, 4096, 8192],
        # Tensor-core dtypes peak at larger shapes than the grid's top corner; float32 peaks inside it.
        matmul_probes=[(16384, 16384, 16384), (4096, 4096, 16384), (8192, 8192, 16384)],
        probe_dtypes=["tf32", "bfloat16", "float16"],
        bandwidth_sizes=_geometric(1 << 12, top, 2),
        sin_sizes=_geometric(1 << 10, 1 << 28, 4),
        transfer_sizes=_geometric(1 << 10, 1 << 26, 4),
        point_budget_s=0.006,
        overhead_budget_s=0.05,
        attention_seqs=[128, 1024, 8192],
        # one sequence alone (``single``) to a full GPU, with two counts between: the kernel's query
        # tiles fill the multiprocessors and then queue in waves, a time that is not affine in tokens
        attention_tokens=[16384, 65536, 262144],
        conv_dtypes=["float32", "bfloat16", "float16"],
        conv_shapes=(conv.GPU_SHAPES + conv.GPU_PATCH_SHAPES + conv.GPU_3D_SHAPES + conv.channel_shapes() + conv.GPU_CHANNELS_LAST_SHAPES
                     + conv.GPU_NARROW_PLANE_SHAPES),
        conv_keyed=True,
        conv_half_shapes=conv.GPU_HALF_SHAPES,
        pointwise_dtypes=["float32", "bfloat16"],
        rnn_dtypes=["float32", "bfloat16"],
        rnn_shapes=rnn.GPU_SHAPES,
        mechanisms=True,
        matmul_twins=dict(GPU_MATMUL_TWINS),
    )


def resolve_device(device: str) -> str:
    """Validate ``--device``: 'cpu', 'cuda' or 'cuda:N'; absent devices give one clear error."""
    if device == "cpu":
        return "cpu"
    m = re.fullmatch(r"cuda(?::(\d+))?", device)
    if not m:
        raise DeviceNotAvailable(f"unknown device '{device}'; use cpu, cuda or cuda:N")
    if not torch.cuda.is_available():
        raise DeviceNotAvailable(
            f"--device {device} asked for a GPU but torch sees no CUDA device on this machine; "
            "use --device cpu, or run where an NVIDIA GPU and a CUDA build of torch are present"
        )
    index = int(m.group(1) or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceNotAvailable(
            f"--device {device} does not exist: this machine has {count} GPU(s) (cuda:0..cuda:{count - 1})"
        )
    return f"cuda:{index}"


def default_name(device: str) -> str:
    if device.startswith("cuda"):
        name = torch.cuda.get_device_name(int(device.split(":")[1]))
    else:
        name = "cpu-" + cpu_identity(torch.get_num_threads()).model
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return re.sub(r"-+", "-", slug.replace("-r-", "-").replace("(r)", ""))


class _Progress:
    """Thin wrapper over rich.progress so calibration shows one bar with the current stage."""

    def __init__(self, total: int, enabled: bool):
        self.enabled = enabled
        self.bar = None
        if enabled:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description:<28}"), BarColumn(), TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(), transient=True)
            self.task = self.bar.add_task("calibrating", total=total)

    def __enter__(self):
        if self.bar:
            self.bar.__enter__()
        return self

    def __exit__(self, *exc):
        if self.bar:
            self.bar.__exit__(*exc)

    def stage(self, text: str):
        if self.bar:
            self.bar.update(self.task, description=text)

    def step(self):
        if self.bar:
            self.bar.advance(self.task)

    def advance(self, steps: int):
        if self.bar and steps > 0:
            self.bar.advance(self.task, steps)


def _measure_part(device: str, plan: Plan, progress: _Progress, warnings: list, stages: dict | None = None,
                  host_index: dict | None = None) -> Measurements:
    """One part's measurements. On a GPU, ``host_index`` (when given) collects the host-speed index
    sampled after every stage (``"run"``, with the ops alone beside it, ``"run_alone"``) and around the
    overheads stage (``"overheads"``): ``host_phase`` puts the host costs at the run's median speed."""
    gpu = device.startswith("cuda")
    stages = stages if stages is not None else {}
    clock = [time.perf_counter()]
    part = "gpu" if gpu else "cpu"
    index_ops = representative_ops(device) if gpu and host_index is not None else None
    index_mix = mix_of(index_ops) if index_ops is not None else None

    def index_samples(key: str, n: int = 1):
        """``n`` index samples under ``key``; after a stage ("run"), each with the ops alone beside it."""
        if index_mix is None:
            return
        for _ in range(n):
            host_index.setdefault(key, []).append(index_sample_s(index_mix, INDEX_WARM_PASSES))
            if key == "run":
                host_index.setdefault("run_alone", []).append(alone_sample_s(index_ops))

    def lap(name: str):
        now = time.perf_counter()
        stages[f"{part} {name}"] = round(now - clock[0], 3)
        index_samples("run")
        clock[0] = time.perf_counter()

    # No cache flush for matmuls: in a forward pass a GEMM's activations were just written by the op
    # before it and are L2-hot, and repeated timing of one GEMM keeps them so (cold-L2 timings
    # over-predict mid-size GEMMs in real models by 25-40%).
    flush = 0
    curves = []
    for dtype in plan.matmul_dtypes:
        progress.stage(f"{device} matmul {dtype}")
        twin = next((c for c in curves if c.dtype == plan.matmul_twins.get(dtype)), None)
        curve = matmul.twin_curve(dtype, twin, device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step) if twin else None
        if curve is None:
            curve = matmul.measure_curve(
                dtype, plan.grid_for(dtype), device, peak_probes=plan.probes_for(dtype), flush_bytes=flush,
                budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step,
            )
        else:
            progress.advance(len(plan.grid_for(dtype)) ** 3 + len(plan.probes_for(dtype)) - len(curve.check_points))
        curves.append(curve)
        lap(f"matmul {dtype}")
    bandwidth = []
    for kind in ("copy", "read", "write"):
        progress.stage(f"{device} bandwidth {kind}")
        bandwidth.append(
            memory.measure_bandwidth(kind, plan.bandwidth_sizes, device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step)
        )
        lap(f"bandwidth {kind}")
    pointwise = []
    for dtype in plan.pointwise_dtypes:
        for op in POINTWISE_OPS:
            progress.stage(f"{device} pointwise {op} {dtype}")
            pointwise.append(
                memory.measure_pointwise(
                    plan.sin_sizes, device, op=op, dtype_name=dtype, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step
                )
            )
            lap(f"pointwise {op} {dtype}")
    for stage, ops in (("layout", memory.LAYOUT_OPS), ("strided", memory.STRIDED_OPS), ("reductions", memory.REDUCTION_FAMILIES if gpu else ())):
        if not ops:
            continue
        for dtype in plan.pointwise_dtypes:
            for op in ops:
                progress.stage(f"{device} {stage} {op} {dtype}")
                pointwise.append(
                    memory.measure_pointwise(plan.strided_sizes(), device, op=op, dtype_name=dtype, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step)
                )
        lap(stage)  # one key per stage, as calibrate.refresh records the layout stage
    for op in memory.SELECTION_OPS:
        progress.stage(f"{device} selection {op}")
        pointwise.append(
            memory.measure_pointwise(plan.family_sizes(op), device, op=op, dtype_name="float32", budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step)
        )
        lap(f"selection {op}")
    if gpu:  # one stage, as calibrate.refresh --stage pooling measures it again
        progress.stage(f"{device} pooling")
        pointwise += measure_pooling(plan, device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step)
        lap("pooling")
    if gpu:
        progress.stage(f"{device} cat grid")
        pointwise += memory.measure_cat_grid(device, budget_s=plan.point_budget_s, warnings=warnings, quick=plan.quick, progress=progress.step)
        lap("cat grid")
        progress.stage(f"{device} gather rows")
        pointwise += memory.measure_gather_rows(device, budget_s=plan.point_budget_s, warnings=warnings, quick=plan.quick, progress=progress.step)
        lap("gather rows")
    attention = []
    if gpu and plan.attention_seqs:
        progress.stage(f"{device} attention")
        # bf16 stands for fp16 (the same kernels at the same speed, within 1% on the H100); float32
        # runs the memory-efficient kernel at a rate of its own: two curves (heads of 32 and 64), one mask.
        # Each new SDPA shape costs ~0.1 s of plan building.
        for dtype, head_dim, causal in ATTENTION_CURVES:
            attention.append(
                memory.measure_attention(
                    device, dtype, head_dim, causal, seqs=plan.attention_seqs, tokens=plan.attention_tokens,
                    budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step, single=not plan.quick,
                )
            )
        lap("attention")
    convs = []
    for dtype in plan.conv_dtypes:
        progress.stage(f"{device} conv {dtype}")
        convs.append(conv.measure_conv(
            dtype, plan.conv_shapes_for(dtype), device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step, keyed=plan.conv_keyed,
        ))
    if plan.conv_dtypes:
        lap("conv")
    conv_families, gemm_ratios, norm_families, foreach = [], [], [], None
    if gpu and plan.mechanisms:
        progress.stage(f"{device} depthwise and grouped convolutions")
        conv_families = mechanisms.measure_conv_families(device, budget_s=plan.point_budget_s / 2, warnings=warnings, progress=progress.step, quick=plan.quick)
        lap("conv families")
        progress.stage(f"{device} misaligned GEMMs and addmm")
        gemm_ratios = mechanisms.measure_gemm_ratios(device, budget_s=plan.point_budget_s / 2, warnings=warnings, progress=progress.step, quick=plan.quick)
        lap("gemm ratios")
        progress.stage(f"{device} batch norm and group norm")
        norm_families = mechanisms.measure_norm_families(device, budget_s=plan.point_budget_s / 2, warnings=warnings, progress=progress.step, quick=plan.quick)
        lap("norm families")
        progress.stage(f"{device} multi-tensor kernels")
        foreach = mechanisms.measure_foreach(device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step)
        lap("foreach")
    if not gpu and not plan.quick:
        progress.stage(f"{device} training batch norm")
        norm_families = mechanisms.measure_batch_norm_training(device, budget_s=plan.point_budget_s / 2, warnings=warnings, progress=progress.step)
        lap("batch norm training")
        progress.stage(f"{device} convolution passes")
        conv_passes = [conv.measure_conv_passes(device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step)]
        lap("conv passes")
    else:
        conv_passes = []
    rnns = []
    for dtype in plan.rnn_dtypes:
        progress.stage(f"{device} lstm/gru {dtype}")
        rnns.append(rnn.measure_rnn(dtype, plan.rnn_shapes, device, budget_s=plan.point_budget_s, warnings=warnings, progress=progress.step))
    if plan.rnn_dtypes:
        lap("rnn")
    progress.stage(f"{device} overheads")
    index_samples("overheads", HOST_INDEX_SAMPLES)
    overheads = overhead.measure_overheads(
        device, budget_s=plan.overhead_budget_s, warnings=warnings, progress=progress.step
    )
    index_samples("overheads", HOST_INDEX_SAMPLES)
    lap("overheads")
    if not plan.quick:
        # what a training step costs the host beyond the forward's dispatch (roofline.measure.training_host)
        from roofline.measure.training_host import measure_training_host

        progress.stage(f"{device} training host costs")
        overheads = overheads.model_copy(update=dict(training=measure_training_host(device, rounds=TRAINING_HOST_ROUNDS)))
        lap("training host costs")
    transfers = []
    if gpu:
        for direction in ("h2d", "d2h"):
            for host_memory in ("pinned", "pageable"):
                progress.stage(f"copy {direction} {host_memory}")
                transfers.append(
                    transfer.measure_transfer(
                        direction, host_memory, plan.transfer_sizes, device, budget_s=4 * plan.point_budget_s, warnings=warnings, progress=progress.step
                    )
                )
                lap(f"copy {direction} {host_memory}")
    if gpu and plan.compiled_overheads:
        # last of the GPU stages: counting compiled kernels needs the profiler, which slows every
        # later launch from this process
        progress.stage(f"{device} torch.compile overheads")
        compiled_costs = compiled.measure_compiled_overheads(device, budget_s=compiled.COMPILED_BUDGET_S, warnings=warnings, reference_s=eager_chain_kernel_s(overheads))
        overheads = overheads.model_copy(update=compiled_costs)
        lap("torch.compile overheads")
    return Measurements(
        matmul=curves, bandwidth=bandwidth, pointwise=pointwise, overheads=overheads, transfers=transfers, attention=attention, conv=convs, rnn=rnns,
        conv_families=conv_families, gemm_ratios=gemm_ratios, norm_families=norm_families, conv_passes=conv_passes, foreach=foreach,
    )


# The swings of the run's host level over the overheads stage's that a host's own drift explains: on the
# lent H100 a model's host ran at x0.58-x2.03 of the index the stage implied seconds before
# (benchmarks/host_index_probe.py). A swing beyond the band comes from something else than the drift
# the model's runs will see (the calibration's own stages disturbing the samples): the host costs then
# keep the overheads stage's level, and the profile says so. Its ends hold every recorded session whose
# factor the runs bore out (x0.62, x1.53) and leave out the two they did not (x0.57, x1.82), though
# those two were read by the earlier rule, the index around the stage (docs/design.md).
HOST_PHASE_BAND = (0.6, 1.6)
HOST_COSTS_KEPT = "host costs kept as the overheads stage measured them"  # the warning's end, which the summary finds
_KEPT_FACTOR = re.compile(r"ran (x[0-9.]+) of the overheads stage's")  # the factor in that warning
MIN_LAPS = 5  # samples after stages the run's level needs


def host_phase(host_index: dict, overheads: Overheads) -> float | None:
    """The run's host level against the overheads stage's: the median over the samples after every
    stage of the representative ops' summed time alone, over the stage's sum of the same ops (None with
    fewer than ``MIN_LAPS`` samples). One stage of about a second is one sample of a host that drifts
    by tens of percent for seconds to minutes at a time; the median of samples spread over the run is
    the host's typical speed, which the eager host costs measured in that stage then stand for. The
    stage's interleaving factor stays: the samples' own ratio of the mix to the ops alone rose with
    a slow phase (x1.55 against the stage's x1.29 in one H100 run), and whether models follow it is
    not yet shown (``docs/design.md``, the host's typical speed)."""
    alone = host_index.get("run_alone", [])
    stage_alone = mix_alone_sum_s({name: stat.median_s for name, stat in overheads.dispatch_by_op_s.items()})
    if len(alone) < MIN_LAPS or stage_alone <= 0:
        return None
    return statistics.median(alone) / stage_alone


def with_host_phase(overheads: Overheads, info: CalibrationInfo, warnings: list[str]) -> Overheads:
    """The overheads stage's host costs at the run's level (``host_phase`` of the samples the overheads
    hold, ``at_run_host_speed``), unless the samples are too few or other programs took the CPUs or
    measurements waited for one (the slow moments are theirs, which the timing protocol rejects and
    the samples after each stage do not; a spin loop's spread alone is the host's own drift,
    ``calibrate.load.others_disturbed``). Overheads the checks measured again are levelled as well:
    the level is against the costs the profile holds, whichever measurement they came from."""
    factor = host_phase(overheads.host_index_s, overheads)
    if factor is None or (info.load is not None and load.others_disturbed(info.load)):
        return overheads
    return at_run_host_speed(overheads, factor, warnings)


def at_run_host_speed(overheads: Overheads, factor: float, warnings: list[str]) -> Overheads:
    """The overheads stage's host costs at the run's level (``at_host_phase``) where ``factor`` lies
    within ``HOST_PHASE_BAND``; as measured otherwise, with a warning added."""
    if HOST_PHASE_BAND[0] <= factor <= HOST_PHASE_BAND[1]:
        return at_host_phase(overheads, factor)
    warnings.append(f"host speed over the calibration ran x{factor:.2f} of the overheads stage's, beyond the drift a host shows "
                    f"(x{HOST_PHASE_BAND[0]}-x{HOST_PHASE_BAND[1]}): {HOST_COSTS_KEPT}")
    return overheads


def at_host_phase(overheads: Overheads, factor: float) -> Overheads:
    """The overheads stage's host costs (dispatch, module calls, synchronize, graph launch; not the
    training or torch.compile costs, measured at other moments) multiplied by ``factor``."""
    moved = {k: scaled_stat(getattr(overheads, k), factor) for k in ("dispatch_s", "module_call_s", "synchronize_s", "graph_launch_s", "op_small_s")}
    moved["dispatch_by_op_s"] = {name: scaled_stat(stat, factor) for name, stat in overheads.dispatch_by_op_s.items()}
    return overheads.model_copy(update=dict(moved, host_phase_factor=factor))


REMEASURE_PAUSES_S = (0.5, 1.0, 2.0)  # before each re-measurement of what failed a check


def _splice(points, fresh, key, keep_slower: bool):
    """``points`` with each point of ``fresh`` put in place of the one of the same ``key``, where
    it is faster (or, for a figure faster than physics, slower)."""
    by_key = {key(p): p for p in fresh}
    out = []
    for p in points:
        q = by_key.get(key(p))
        better = q is not None and (q.time.median_s > p.time.median_s if keep_slower else q.time.median_s < p.time.median_s)
        out.append(q if better else p)
    return out


def _remeasure(problem: Problem, meas: Measurements, device: str, plan: Plan, warnings: list) -> Measurements | None:
    """The measurements with the problem's points (or stage) measured again at twice the budget;
    None when the problem is not one a measurement can fix (the plan's sizes)."""
    budget = 2 * plan.point_budget_s
    kind, _, rest = problem.stage.partition(" ")
    if kind == "matmul" and problem.points:
        curve = meas.matmul_curve(rest)
        fresh = [matmul.measure_point(m, n, k, rest, device, 0, budget, warnings) for m, n, k in problem.points]
        shape = lambda p: (p.m, p.n, p.k)  # noqa: E731
        updated = curve.model_copy(update=dict(
            points=_splice(curve.points, fresh, shape, problem.too_fast), peak_probes=_splice(curve.peak_probes, fresh, shape, problem.too_fast),
        ))
        # a cube derived from this one (float16's from bfloat16's) follows its re-measured points
        curves = [updated if c is curve else c for c in meas.matmul]
        curves = [matmul.derived(updated, c.dtype, c.derived_ratio, c.check_points) if c.derived_from == updated.dtype else c for c in curves]
        return meas.model_copy(update=dict(matmul=curves))
    if kind == "bandwidth" and problem.points:
        curve = meas.bandwidth_curve(rest)
        fresh = memory.measure_bandwidth(rest, list(problem.points), device, budget_s=budget, warnings=warnings).points
        updated = BandwidthCurve(kind=curve.kind, dtype=curve.dtype, points=_splice(curve.points, fresh, lambda p: p.working_set_bytes, problem.too_fast))
        return meas.model_copy(update=dict(bandwidth=[updated if c is curve else c for c in meas.bandwidth]))
    if kind == "pointwise" and problem.points:
        op, dtype = rest.split(" ")
        curve = meas.pointwise_curve(op, dtype)
        fresh = memory.measure_pointwise(list(problem.points), device, op=op, dtype_name=dtype, budget_s=budget, warnings=warnings).points
        updated = PointwiseCurve(op=op, dtype=dtype, points=_splice(curve.points, fresh, lambda p: p.elements, problem.too_fast))
        return meas.model_copy(update=dict(pointwise=[updated if c is curve else c for c in meas.pointwise]))
    if kind == "overheads":
        old = meas.overheads
        fresh = overhead.measure_overheads(device, budget_s=2 * plan.overhead_budget_s, warnings=warnings)
        if fresh.dispatch_s.median_s >= old.dispatch_s.median_s:
            return meas
        later = ("compiled_call_s", "compiled_kernel_s", "compiled_input_s", "program_factor", "training")  # not measure_overheads'
        return meas.model_copy(update=dict(overheads=fresh.model_copy(update={k: getattr(old, k) for k in later})))
    return None


def check_and_remeasure(part, kind: str, device: str, plan: Plan, warnings: list, remeasured: list[str]) -> list[Problem]:
    """Run the sanity checks on a measured part; re-measure what fails, after a pause that grows
    each time (another program's burst of work may pass meanwhile), up to ``REMEASURE_PAUSES_S``
    times; return what still fails and blocks saving (the rest goes to ``warnings``). The part's
    measurements are replaced in place."""
    problems = check_part(part, kind)
    for attempt, pause in enumerate(REMEASURE_PAUSES_S):
        # a non-blocking problem gets one re-measurement; a blocking one as many as it needs
        fixable = [p for p in problems if _remeasurable(p) and (p.blocking or attempt == 0)]
        if not fixable:
            break
        time.sleep(pause)
        for problem in fixable:
            fresh = _remeasure(problem, part.measurements, device, plan, warnings)
            if fresh is not None and fresh is not part.measurements:  # the same object: the new reading was not kept
                part.measurements = fresh
                remeasured.append(str(problem))
        problems = check_part(part, kind)
    for problem in problems:
        if not problem.blocking:  # reproduced by every re-measurement: the library's own behaviour
            warnings.append(f"kept after re-measuring (prediction caps it): {problem}")
    return [p for p in problems if p.blocking]


def _remeasurable(problem: Problem) -> bool:
    return problem.stage == "overheads" or bool(problem.points)



def run_calibration(
    device: str = "cuda", *, quick: bool = False, name: str | None = None, show_progress: bool = True, command: str = "",
    with_compile: bool = False, raise_priority: bool = True, on_busy=None, prefetch_libraries: bool = True,
) -> DeviceProfile:
    """Calibrate the GPU (if ``device`` is cuda) and the host CPU; return the profile (not saved).

    ``with_compile`` also measures torch.compile's host costs (two compilations: about 25 s more on the H100 machine), which
    the torch.compile advice needs; without them it prices compiled launches like eager dispatch.

    The machine's load is probed first (``on_busy(line)`` is called when other programs are using
    it) and recorded in ``calibration.load``; the calibration runs at a raised scheduling priority
    where the OS allows it (``raise_priority``). Each part is checked (``roofline.profile_checks``)
    and what fails is re-measured once; what still fails is in ``calibration.checks_failed``. The GPU
    libraries' files are read ahead while the first stages run (``calibrate.prefetch``;
    ``prefetch_libraries`` False leaves the first calls to read them)."""
    device = resolve_device(device)
    before = load.probe_before()
    if on_busy is not None and before.others_busy is not None and before.others_busy >= load.BUSY_OTHERS_SHARE:
        on_busy(
            f"other programs are using {100 * before.others_busy:.0f}% of the CPUs; calibration rejects disturbed "
            "measurements and re-measures what fails its checks, but figures are best made on a quiet machine"
        )
    started = time.perf_counter()
    warnings: list[str] = []
    threads = torch.get_num_threads()
    cpu_ident = cpu_identity(threads)
    cplan = cpu_plan(cpu_ident, quick, beside_gpu=device.startswith("cuda"))
    gpu_part = None
    gpu_ident = None
    gplan = None
    if device.startswith("cuda"):
        index = int(device.split(":")[1])
        torch.cuda.set_device(index)
        if prefetch_libraries:
            prefetch.prefetch_gpu_libraries()
        gpu_ident = gpu_identity(index)
        gplan = gpu_plan(quick, gpu_ident.memory_bytes)
        gplan.compiled_overheads = with_compile
    total = cplan.steps(False) + (gplan.steps(True) if gplan else 0)
    stages: dict[str, float] = {}
    # no_grad, not inference_mode: models are run (and --measure times them) under no_grad, where a
    # view op also records autograd view metadata; inference_mode skips it, which makes view
    # dispatch about 2x cheaper on the host than models pay.
    remeasured: list[str] = []
    failed: list[Problem] = []
    with torch.no_grad(), _Progress(total, show_progress) as progress, load.RaisedPriority(raise_priority) as priority, Tally() as tally:
        host_index: dict[str, list[float]] = {}
        if gplan is not None:
            gpu_meas = _measure_part(device, gplan, progress, warnings, stages=stages, host_index=host_index)
            gpu_part = GpuPart(identity=gpu_ident, peaks=peaks.gpu_peaks(gpu_ident), measurements=gpu_meas)
            progress.stage(f"{device} checks")
            clock = time.perf_counter()
            failed += check_and_remeasure(gpu_part, "gpu", device, gplan, warnings, remeasured)
            stages["gpu checks"] = round(time.perf_counter() - clock, 3)
        cpu_meas = _measure_part("cpu", cplan, progress, warnings, stages=stages)
        host = CpuPart(identity=cpu_ident, peaks=peaks.cpu_peaks(cpu_ident), measurements=cpu_meas)
        progress.stage("cpu checks")
        clock = time.perf_counter()
        failed += check_and_remeasure(host, "cpu", "cpu", cplan, warnings, remeasured)
        stages["cpu checks"] = round(time.perf_counter() - clock, 3)
        if gpu_part is not None and gpu_part.measurements.conv:
            # last: a profiler session slows every later launch of the process (``conv.with_kernel_times``)
            progress.stage(f"{device} conv kernels")
            clock = time.perf_counter()
            try:
                gpu_part.measurements.conv = conv.with_kernel_times(gpu_part.measurements.conv, device, warnings)
            except RuntimeError as e:  # out of memory, the profiler's own errors: the points keep their times
                warnings.append(f"conv kernels' times not measured: {type(e).__name__}: {str(e).partition(chr(10))[0]}")
            stages["gpu conv kernels"] = round(time.perf_counter() - clock, 3)
    info = CalibrationInfo(
        created_at=datetime.now(timezone.utc),
        duration_s=time.perf_counter() - started,
        quick=quick,
        command=command or f"roofline calibrate --device {device}" + (" --quick" if quick else ""),
        roofline_version=__version__,
        torch_version=torch.__version__,
        python_version=platform.python_version(),
        hostname=socket.gethostname(),
        warnings=warnings,
        stage_seconds=stages,
        load=load.machine_load(before, tally, priority.raised),
        remeasured=remeasured,
        checks_failed=[str(p) for p in failed],
    )
    profile = DeviceProfile(name=name or default_name(device), calibration=info, host=host, gpu=gpu_part)
    if gpu_part is not None:
        ov = gpu_part.measurements.overheads
        sampled = ov.model_copy(update=dict(host_index_s={k: list(v) for k, v in host_index.items()}))
        gpu_part.measurements.overheads = with_host_phase(sampled, info, profile.calibration.warnings)
    return profile


def summary_rows(profile: DeviceProfile) -> list[tuple[str, str, str, str, str]]:
    """(part, quantity, measured, theoretical, ratio) rows for the calibration summary table."""
    rows = []

    def fmt_rate(x, unit):
        return "n/a" if x is None else count(x, unit)

    def ratio(a, b):
        return f"{a / b:.2f}" if a and b else "-"

    def fmt_time(stat):
        return "n/a" if stat is None else f"{stat.median_s * 1e6:.2f} us ± {stat.iqr_s * 1e6 / 2:.2f}"

    parts = [("GPU", profile.gpu)] if profile.gpu else []
    parts.append(("CPU", profile.host))
    for label, part in parts:
        meas, peaks = part.measurements, part.peaks
        for c in meas.matmul:
            theo = peaks.flop_per_s.get(c.dtype)
            rows.append((label, f"matmul {c.dtype}", fmt_rate(c.peak_flop_per_s, "FLOP/s"), fmt_rate(theo, "FLOP/s"), ratio(c.peak_flop_per_s, theo)))
        cache = part.identity.l2_cache_bytes if label == "GPU" else part.identity.l3_cache_bytes
        for c in meas.bandwidth:
            theo = peaks.memory_bytes_per_s
            dram = c.dram_bytes_per_s(cache)
            rows.append((label, f"bandwidth {c.kind} (DRAM)", fmt_rate(dram, "B/s"), fmt_rate(theo, "B/s"), ratio(dram, theo)))
            rows.append((label, f"bandwidth {c.kind} (best, cache)", fmt_rate(c.peak_bytes_per_s, "B/s"), "-", "-"))
        for c in meas.pointwise:
            rows.append((label, f"{c.op} ({c.dtype})", fmt_rate(c.peak_bytes_per_s, "B/s"), fmt_rate(peaks.memory_bytes_per_s, "B/s"), ratio(c.peak_bytes_per_s, peaks.memory_bytes_per_s)))
        for c in meas.conv:
            best = max(p.flop_per_s for p in c.points)
            name = "tf32" if c.tf32 else c.dtype
            theo = peaks.flop_per_s.get(name)
            rows.append((label, f"convolution {c.dtype}{' (TF32)' if c.tf32 else ''}, best of {len(c.points)} shapes", fmt_rate(best, "FLOP/s"), fmt_rate(theo, "FLOP/s"), ratio(best, theo)))
        for c in meas.rnn:
            for kind in sorted({p.kind for p in c.points}):
                steps = [p.step_s for p in c.points if p.kind == kind]
                rows.append((label, f"{kind} layer step {c.dtype}, {len(steps)} shapes", f"{min(steps) * 1e6:.1f}-{max(steps) * 1e6:.1f} us", "-", "-"))
        for c in meas.transfers:
            theo = peaks.host_link_bytes_per_s
            value = fmt_rate(c.bandwidth_bytes_per_s, "B/s") + f", {c.latency_s * 1e6:.1f} us latency"
            if c.fresh_destination:
                top = max(c.points, key=lambda p: p.bytes)
                value += f"; {fmt_rate(top.bytes_per_s, 'B/s')} at {top.bytes >> 20} MiB"
            name = f"{c.direction} {c.host_memory}" + (" (new tensor)" if c.fresh_destination else "")
            rows.append((label, name, value, fmt_rate(theo, "B/s"), ratio(c.bandwidth_bytes_per_s, theo)))
        o = meas.overheads
        rows.append((label, "dispatch one aten op (host)", fmt_time(o.dispatch_s), "-", "-"))
        rows.append((label, "nn.Module call (host)", fmt_time(o.module_call_s), "-", "-"))
        if o.host_phase_factor != 1.0:
            rows.append((label, "host costs put at the run's median host speed", f"x{o.host_phase_factor:.2f}", "-", "-"))
        kept = [w for w in profile.calibration.warnings if w.endswith(HOST_COSTS_KEPT)]
        if label == "GPU" and kept:
            rows.append((label, "host costs kept at the overheads stage (host-speed swing beyond drift)", _KEPT_FACTOR.search(kept[0]).group(1), "-", "-"))
        if o.kernel_min_s:
            rows.append((label, "kernel in a CUDA graph", fmt_time(o.kernel_min_s), "-", "-"))
        if o.graph_launch_s:
            rows.append((label, "CUDA graph launch (host)", fmt_time(o.graph_launch_s), "-", "-"))
        if o.synchronize_s:
            rows.append((label, "synchronize round trip", fmt_time(o.synchronize_s), "-", "-"))
        if o.compiled_call_s and o.compiled_kernel_s:
            rows.append((label, "torch.compile call / kernel launch (host)", f"{fmt_time(o.compiled_call_s)} / {fmt_time(o.compiled_kernel_s)}", "-", "-"))
        if o.op_small_s:
            rows.append((label, f"tiny op ({part.identity.threads_used} threads)" if label == "CPU" else "tiny op", fmt_time(o.op_small_s), "-", "-"))
    return rows
