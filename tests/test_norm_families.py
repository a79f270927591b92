"""Normalizations whose kernels walk rows, priced on their calibrated families (synthetic points):
eval batch norm by plane size (time follows the number of short planes, not the bytes) and group
norm by rows in flight (few long rows leave the GPU idle)."""

import pytest
import torch
import torch.nn.functional as F

from roofline.model.families import plane_time_s, rows_in_flight_time_s
from roofline.profiles import load_profile_file
from roofline.schema.profile import NormFamilyCurve, NormFamilyPoint, Stat
from tests.conftest import REPO
from tests.test_mechanisms import kernel_s

FIXTURE = REPO / "tests" / "fixtures" / "h100_profile.json"
LAUNCH_S = 2e-6


def _point(rows: int, row: int, t: float) -> NormFamilyPoint:
    return NormFamilyPoint(rows=rows, row=row, time=Stat(median_s=t, iqr_s=0.0, samples=5))


# eval batch norm: a launch cost plus a cost per plane that a short plane makes far above its bytes
PLANE_NS = {49: 0.7, 784: 2.3}  # ns per plane at many planes (bfloat16)


def _batch_norm_points() -> list[NormFamilyPoint]:
    return [_point(planes, plane, LAUNCH_S + planes * ns * 1e-9) for plane, ns in PLANE_NS.items() for planes in (128, 1 << 17)]


# group norm: per row count, a launch cost plus a cost per element of a row (each row's block
# streams it); 8 rows run side by side, 4096 rows in waves
ROW_NS = {8: 0.45, 4096: 0.45 * 4096 / 1024}  # ns per element of one row


def _group_norm_points() -> list[NormFamilyPoint]:
    return [_point(rows, row, LAUNCH_S + row * ns * 1e-9) for rows, ns in ROW_NS.items() for row in (4096, 65536)]


def _profile(families: bool = True):
    profile = load_profile_file(FIXTURE)
    if families:
        profile.gpu.measurements.norm_families = [
            NormFamilyCurve(kind="batch_norm_eval", dtype="bfloat16", points=_batch_norm_points()),
            NormFamilyCurve(kind="group_norm", dtype="float32", points=_group_norm_points()),
        ]
    return profile


def _batch_norm_case(shape, dtype=torch.float16, training=False, channels_last=False):
    c = shape[1]
    x = torch.empty(shape, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    params = [torch.empty(c, dtype=dtype) for _ in range(4)]
    return (lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, training)), (x, *params)


def test_eval_batch_norm_follows_the_number_of_short_planes():
    # [32, 2048, 7, 7] in fp16 (bf16's curve stands for it): 65536 planes at 0.7 ns each, not its bytes
    fn, args = _batch_norm_case((32, 2048, 7, 7))
    assert kernel_s(fn, args, _profile()) == pytest.approx(LAUNCH_S + 65536 * 0.7e-9, rel=0.01)
    assert kernel_s(fn, args, _profile(families=False)) < 0.5 * (LAUNCH_S + 65536 * 0.7e-9)  # bytes on the layer_norm curve
    # the same elements in planes of 14 x 14, half-way between the sizes in log(plane)
    fn, args = _batch_norm_case((32, 512, 14, 14))
    elements = 32 * 512 * 196
    at_49, at_784 = (LAUNCH_S + elements / p * PLANE_NS[p] * 1e-9 for p in (49, 784))
    assert kernel_s(fn, args, _profile()) == pytest.approx((at_49 * at_784) ** 0.5, rel=0.01)
    # planes shorter than the shortest calibrated one each cost what one of that size does
    assert plane_time_s(_batch_norm_points(), 1 << 16, 16) == pytest.approx(LAUNCH_S + (1 << 16) * 0.7e-9)


def test_batch_norm_of_another_kernel_keeps_its_price():
    # training (statistics first), channels-last and 2-D inputs run other kernels than the plane walk
    for case in (dict(training=True), dict(channels_last=True)):
        fn, args = _batch_norm_case((32, 2048, 7, 7), **case)
        assert kernel_s(fn, args, _profile()) == pytest.approx(kernel_s(fn, args, _profile(families=False)))
    fn, args = _batch_norm_case((32, 2048))
    assert kernel_s(fn, args, _profile()) == pytest.approx(kernel_s(fn, args, _profile(families=False)))


def _group_norm_case(shape, groups=8):
    c = shape[1]
    return (lambda x, w, b: F.group_norm(x, groups, w, b)), (torch.empty(shape), torch.empty(c), torch.empty(c))


def test_group_norm_follows_rows_in_flight():
    # one image of 32 channels in 8 groups: 8 rows of 65536, each row's block alone on an SM
    fn, args = _group_norm_case((1, 32, 128, 128))
    one_image = LAUNCH_S + 65536 * ROW_NS[8] * 1e-9
    assert kernel_s(fn, args, _profile()) == pytest.approx(one_image, rel=0.01)
    assert kernel_s(fn, args, _profile(families=False)) < 0.5 * one_image  # bytes at the bandwidth
    # 256 rows: between the counts in log(rows) at the same row length
    fn, args = _group_norm_case((32, 32, 128, 128))
    at_4096 = LAUNCH_S + 65536 * ROW_NS[4096] * 1e-9
    f = 5 / 9  # log(256 / 8) / log(4096 / 8)
    assert kernel_s(fn, args, _profile()) == pytest.approx(one_image ** (1 - f) * at_4096 ** f, rel=0.01)
    # beyond the largest count the rows run in waves: twice the rows, twice the time
    points = _group_norm_points()
    assert rows_in_flight_time_s(points, 8192, 4096) == pytest.approx(2 * rows_in_flight_time_s(points, 4096, 4096))
    assert rows_in_flight_time_s(points, 2, 4096) == pytest.approx(rows_in_flight_time_s(points, 8, 4096))


def test_group_norm_backward_follows_its_own_rows_in_flight():
    # the backward's curve (twice the forward's time per element here) at the forward's row count
    profile = _profile()
    profile.gpu.measurements.norm_families.append(NormFamilyCurve(
        kind="group_norm_backward", dtype="float32",
        points=[_point(rows, row, LAUNCH_S + 2 * row * ns * 1e-9) for rows, ns in ROW_NS.items() for row in (4096, 65536)]))
    n, c, side, groups = 1, 32, 128, 8
    args = (torch.empty(n, c, side, side), torch.empty(n, c, side, side), torch.empty(n, groups), torch.empty(n, groups), torch.empty(c))

    def backward(g, x, mean, rstd, w):
        return torch.ops.aten.native_group_norm_backward(g, x, mean, rstd, w, n, c, side * side, groups, [True, True, True])

    assert kernel_s(backward, args, profile) == pytest.approx(LAUNCH_S + 2 * 65536 * ROW_NS[8] * 1e-9, rel=0.01)
    assert kernel_s(backward, args, _profile()) < 0.5 * kernel_s(backward, args, profile)  # without it: the bytes


def test_profiles_without_the_families_price_norms_as_before():
    # every shipped profile lacks them: the op-family curve by bytes, unchanged
    profile = _profile(families=False)
    assert profile.gpu.measurements.norm_families == []
    fn, args = _group_norm_case((1, 32, 128, 128))
    with_other_dtype = _profile()
    with_other_dtype.gpu.measurements.norm_families = with_other_dtype.gpu.measurements.norm_families[:1]  # bf16 batch norm only
    assert kernel_s(fn, args, with_other_dtype) == pytest.approx(kernel_s(fn, args, profile))


# training batch norm on the CPU: ATen's statistics and normalize passes, a rate per element
TRAIN_NS, TRAIN_BACKWARD_NS = 1.2, 0.4


def _cpu_profile(families: bool = True):
    profile = load_profile_file(FIXTURE)
    if families:
        elements = (1 << 14, 1 << 20)
        profile.host.measurements.norm_families = [
            NormFamilyCurve(kind=kind, dtype="float32", points=[_point(n // 256, 256, LAUNCH_S + n * ns * 1e-9) for n in elements])
            for kind, ns in (("batch_norm_train", TRAIN_NS), ("batch_norm_train_backward", TRAIN_BACKWARD_NS))
        ]
    return profile


def _cpu_batch_norm_s(shape, profile, train: bool = True) -> dict[str, float]:
    """Predicted kernel time of each batch norm op of a CPU step (a training step, or an eval forward)."""
    from roofline.graph.training import TrainStep
    from roofline.pipeline import Analysis, Options

    model = torch.nn.BatchNorm2d(shape[1])
    if not train:
        model.eval()
    a = Analysis.of(model, (torch.randn(shape),), None, profile,
                    Options(device="cpu", train=TrainStep(loss="sum") if train else None, batch_sweep=False))
    return {op.packet: k[0] for op, k in zip(a.graph.ops, a.kernels()) if "batch_norm" in op.packet}


def test_cpu_training_batch_norm_follows_its_elements():
    n = 8 * 32 * 16 * 16
    priced = _cpu_batch_norm_s((8, 32, 16, 16), _cpu_profile())
    # a calibrated call's wall time includes one dispatch, which the timeline adds to the op apart
    dispatch = _cpu_profile().host.measurements.overheads.dispatch_s.median_s
    assert priced["aten.native_batch_norm"] == pytest.approx(LAUNCH_S + n * TRAIN_NS * 1e-9 - dispatch, rel=0.01)
    assert priced["aten.native_batch_norm_backward"] == pytest.approx(LAUNCH_S + n * TRAIN_BACKWARD_NS * 1e-9 - dispatch, rel=0.01)
    # the same elements in planes of another size take the same time
    assert _cpu_batch_norm_s((32, 32, 8, 8), _cpu_profile()) == pytest.approx(priced, rel=1e-6)
    # without the curves, the bytes; eval batch norm is not the training kernel
    bytes_priced = _cpu_batch_norm_s((8, 32, 16, 16), _cpu_profile(families=False))
    assert bytes_priced["aten.native_batch_norm"] < 0.5 * priced["aten.native_batch_norm"]
    assert _cpu_batch_norm_s((8, 32, 16, 16), _cpu_profile(), train=False) == pytest.approx(
        _cpu_batch_norm_s((8, 32, 16, 16), _cpu_profile(families=False), train=False))


# training batch norm on a GPU: cuDNN gives each channel a block over its N x H x W elements
H100_TRAINING = REPO / "tests" / "fixtures" / "h100_batch_norm_training.json"


def _h100_training_profile(curves: bool = True):
    import json

    profile = load_profile_file(FIXTURE)
    recorded = json.loads(H100_TRAINING.read_text())
    profile.gpu.measurements.norm_families = [NormFamilyCurve.model_validate(c) for c in recorded["curves"]] if curves else []
    return profile, [r for r in recorded["ops"] if r["measured_s"] >= 20e-6]


def _training_batch_norm_s(op: str, shape, profile) -> float:
    c = shape[1]
    x, g = torch.empty(shape), torch.empty(shape)
    w, m, v = torch.empty(c), torch.empty(c), torch.empty(c)
    if op.startswith("aten.cudnn_batch_norm_backward"):
        fn = lambda g, x, w, m, v: torch.ops.aten.native_batch_norm_backward(g, x, w, m, v, m, v, True, 1e-5, [True, True, True])  # noqa: E731
        return kernel_s(fn, (g, x, w, m, v), profile)
    return kernel_s(lambda x, m, v, w: F.batch_norm(x, m, v, w, w, True), (x, m, v, w), profile)


def test_gpu_training_batch_norm_follows_its_channels_against_the_h100():
    profile, ops = _h100_training_profile()
    bare, _ = _h100_training_profile(curves=False)
    errors = [_training_batch_norm_s(r["op"], r["shape"], profile) / r["measured_s"] - 1 for r in ops]
    assert len(ops) >= 20
    assert sorted(abs(e) for e in errors)[len(errors) // 2] < 0.2
    # the few-channel layers over large planes (MobileNetV2's 16 x 112 x 112) run 5-15x their bytes' time
    few = [r for r in ops if r["shape"][1] <= 32 and r["shape"][2] >= 112]
    assert few
    for r in few:
        assert _training_batch_norm_s(r["op"], r["shape"], profile) == pytest.approx(r["measured_s"], rel=0.25)
        assert _training_batch_norm_s(r["op"], r["shape"], bare) < 0.3 * r["measured_s"]


def test_group_norm_backward_against_the_h100():
    """UNet's GroupNorm gradients (8 groups) as the H100 ran them in training steps
    (``h100_train_own.json``), priced on the shipped profile's group_norm_backward curve within 30%;
    by their bytes they were 41-56% under."""
    import json

    record = json.loads((REPO / "benchmarks" / "results" / "h100_train_own.json").read_text())
    ops = [o for r in record["rows"] for o in r["op_rows"] if o["op"].startswith("aten.native_group_norm_backward")]
    profile = load_profile_file(REPO / "device_profiles" / "nvidia-h100-80gb-hbm3.json")
    assert len(ops) >= 4
    for o in ops:
        n, c, h, w = o["shapes"][1]
        args = (torch.empty(n, c, h, w), torch.empty(n, c, h, w), torch.empty(n, 8), torch.empty(n, 8), torch.empty(c))

        def backward(g, x, mean, rstd, weight):
            return torch.ops.aten.native_group_norm_backward(g, x, mean, rstd, weight, n, c, h * w, 8, [True, True, True])  # noqa: B023

        assert kernel_s(backward, args, profile) == pytest.approx(o["measured_s"], rel=0.3)


def test_the_h100_steps_cudnn_batch_norms_price_per_channel():
    """The ops a GPU step runs (``cudnn_batch_norm`` and ``cudnn_batch_norm_backward``, input first)
    in MobileNetV2's step as the H100 captured it (``h100_train_own.json``'s stored graph), priced
    on the recorded curves against their per-op times."""
    import gzip
    import json

    from roofline.graph.serialize import graph_from_dict
    from roofline.graph.training import TrainStep
    from roofline.pipeline import Analysis, Options

    results = REPO / "benchmarks" / "results"
    case = "zoo:tv_mobilenet_v2"
    graph = graph_from_dict(json.loads(gzip.decompress((results / "h100_train_own_graphs.json.gz").read_bytes()))[case])
    (row,) = [r for r in json.loads((results / "h100_train_own.json").read_text())["rows"] if r["case"] == case]
    measured = {o["i"]: o["measured_s"] for o in row["op_rows"] if o["measured_s"] and o["measured_s"] >= 20e-6}
    options = Options(device="cuda", train=TrainStep(optimizer="adamw", implementation="foreach"), batch_sweep=False)
    priced = {}
    for with_curves in (True, False):
        profile, _ = _h100_training_profile(curves=with_curves)
        kernels = Analysis(graph, profile, "cuda", options).kernels()
        priced[with_curves] = {i: kernels[i][0] for i, op in enumerate(graph.ops) if op.packet.startswith("aten.cudnn_batch_norm") and i in measured}
    packets = {graph.ops[i].packet for i in priced[True]}
    assert packets == {"aten.cudnn_batch_norm", "aten.cudnn_batch_norm_backward"}
    errors = sorted(abs(t / measured[i] - 1) for i, t in priced[True].items())
    bare = sorted(abs(t / measured[i] - 1) for i, t in priced[False].items())
    assert len(errors) >= 20 and errors[len(errors) // 2] < 0.2
    assert bare[len(bare) // 2] > 0.4  # by their bytes
