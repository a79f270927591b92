"""Op-family curves per dtype, the broadcast family, and the conv bias epilogue."""

from pathlib import Path

import pytest
import torch

from calibrate.memory import measure_pointwise
from roofline.pipeline import analyze
from roofline.model.device import DeviceModel
from roofline.schema.profile import PointwiseCurve, PointwisePoint, Stat
from roofline.profiles import load_profile_file

FIXTURE = Path(__file__).parent / "fixtures" / "h100_profile.json"


def _flat_curve(op: str, dtype: str, bytes_per_s: float) -> PointwiseCurve:
    """A curve at one rate at every size from 1 KB to 1 GB."""
    points = []
    for nbytes in (1 << 10, 1 << 20, 1 << 30):
        t = nbytes / bytes_per_s
        points.append(PointwisePoint(elements=nbytes // 4, bytes=nbytes, time=Stat(median_s=t, iqr_s=0.0, samples=5),
                                     elements_per_s=(nbytes // 4) / t, bytes_per_s=bytes_per_s))
    return PointwiseCurve(op=op, dtype=dtype, points=points)


def _profile_with(*curves):
    profile = load_profile_file(FIXTURE)
    keep = [c for c in profile.gpu.measurements.pointwise if (c.op, c.dtype) not in {(k.op, k.dtype) for k in curves}]
    profile.gpu.measurements.pointwise = keep + list(curves)
    return profile


def test_family_rate_takes_the_ops_dtype_then_its_twin_then_float32():
    profile = _profile_with(_flat_curve("softmax", "float32", 2e12), _flat_curve("softmax", "bfloat16", 1e12))
    dev = DeviceModel(profile.gpu, "cuda")
    assert dev.family_bytes_per_s("softmax", 1 << 24, "bfloat16") == pytest.approx(1e12)
    assert dev.family_bytes_per_s("softmax", 1 << 24, "float16") == pytest.approx(1e12)  # bf16 stands for fp16
    assert dev.family_bytes_per_s("softmax", 1 << 24, "float32") == pytest.approx(2e12)
    assert dev.family_bytes_per_s("softmax", 1 << 24, "float64") == pytest.approx(2e12)  # no curve: float32's
    assert dev.family_bytes_per_s("no_such_family", 1 << 24, "float32") is None


def test_a_broadcast_operand_prices_on_the_broadcast_family():
    profile = _profile_with(_flat_curve("add", "float32", 2e12), _flat_curve("mul_broadcast", "float32", 1e12))
    x = torch.randn(4096, 1024)

    def mul_kernel_s(other):
        report = analyze(lambda a, b: a * b, (x, other), profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if o.target.startswith("aten.mul")]
        return op.kernel_s, op.bytes_read + op.bytes_written

    same_s, same_bytes = mul_kernel_s(torch.randn(4096, 1024))
    rows_s, rows_bytes = mul_kernel_s(torch.randn(4096, 1))
    scalar_s, _ = mul_kernel_s(torch.randn(()))
    assert same_s == pytest.approx(same_bytes / 2e12, rel=0.01)
    assert rows_s == pytest.approx(rows_bytes / 1e12, rel=0.01)
    assert scalar_s < rows_s  # a 0-d operand is no broadcast kernel


def test_a_conv_bias_on_the_gpu_adds_a_broadcast_pass_over_the_output():
    # ATen adds cuDNN's convolution bias after it, output.add_(bias) with the bias broadcast over
    # every position: TensorIterator's non-vectorized kernel, the broadcast binary curve of the dtype
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")

    def conv_kernel_s(bias: bool, dtype):
        model = torch.nn.Conv2d(64, 64, 3, padding=1, bias=bias).to(dtype)
        report = analyze(model, (torch.randn(8, 64, 56, 56, dtype=dtype),), profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if o.category == "conv"]
        return op.kernel_s

    for dtype, name, itemsize in ((torch.float32, "float32", 4), (torch.float16, "float16", 2)):
        out_bytes = 8 * 64 * 56 * 56 * itemsize
        extra = conv_kernel_s(True, dtype) - conv_kernel_s(False, dtype)
        rate = dev.family_bytes_per_s("mul_broadcast", 2 * out_bytes, name)
        assert rate < dev.family_bytes_per_s("add", 2 * out_bytes, name)
        assert extra == pytest.approx(2 * out_bytes / rate, rel=0.05)


def test_measure_pointwise_records_its_dtype_and_bytes():
    curve = measure_pointwise([4096, 16384], "cpu", op="mul_broadcast", dtype_name="bfloat16", budget_s=0.005, warnings=[])
    assert curve.op == "mul_broadcast" and curve.dtype == "bfloat16"
    rows = 16384 // 1024
    # x and the output in bf16 (2 bytes each), plus one broadcast value per row
    assert curve.points[-1].bytes == 2 * 2 * rows * 1024 + 2 * rows


def test_a_one_operand_op_prices_on_the_unary_family_when_calibrated():
    x = torch.randn(4096, 1024)

    def kernel_s(fn, profile, *inputs):
        report = analyze(fn, inputs, profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if o.target.startswith("aten.mul")]
        return op.kernel_s, op.bytes_read + op.bytes_written

    with_unary = _profile_with(_flat_curve("add", "float32", 2e12), _flat_curve("unary", "float32", 4e12))
    scaled_s, nbytes = kernel_s(lambda a: a * 0.5, with_unary, x)
    square_s, _ = kernel_s(lambda a: a * a, with_unary, x)  # one value read once: unary too
    binary_s, binary_bytes = kernel_s(lambda a, b: a * b, with_unary, x, torch.randn(4096, 1024))
    assert scaled_s == pytest.approx(nbytes / 4e12, rel=0.01)
    assert square_s == pytest.approx(nbytes / 4e12, rel=0.01)
    assert binary_s == pytest.approx(binary_bytes / 2e12, rel=0.01)
    # a profile made before the unary family: one-operand ops stay on the add curve
    without = _profile_with(_flat_curve("add", "float32", 2e12))
    without.gpu.measurements.pointwise = [c for c in without.gpu.measurements.pointwise if c.op != "unary"]
    assert kernel_s(lambda a: a * 0.5, without, x)[0] == pytest.approx(nbytes / 2e12, rel=0.01)


def test_measure_pointwise_unary_moves_one_read_and_one_write():
    curve = measure_pointwise([4096], "cpu", op="unary", dtype_name="float32", budget_s=0.005, warnings=[])
    assert curve.op == "unary" and curve.points[0].bytes == 2 * 4 * 4096


@pytest.mark.parametrize(
    "family, fn, x",
    [
        ("topk", lambda x: torch.topk(x, 5, dim=-1), torch.randn(64, 4096)),
        ("sort", lambda x: torch.sort(x, dim=-1), torch.randn(64, 4096)),
        ("cumsum", lambda x: torch.cumsum(x, dim=-1), torch.randn(64, 4096)),
        ("compare", lambda x: torch.lt(x, 0.5), torch.randn(64, 4096)),
        ("max_pool2d", lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1), torch.randn(2, 64, 56, 56)),
    ],
)
def test_selection_ops_are_priced_on_their_own_family(family, fn, x):
    # a selection kernel at 1/100 of the copy rate: the op's memory term must come from its family's curve
    slow = 1e10
    profile = _profile_with(_flat_curve(family, "float32", slow))
    report = analyze(fn, (x,), profile, device="cuda", batch_sweep=False)
    op = max(report.ops, key=lambda o: o.memory_s)
    assert op.memory_s == pytest.approx((op.bytes_read + op.bytes_written) / slow, rel=1e-6)
    plain = analyze(fn, (x,), load_profile_file(FIXTURE), device="cuda", batch_sweep=False)
    assert max(o.memory_s for o in plain.ops) < op.memory_s / 10  # without the family: the copy curve


def test_selection_bytes_are_the_registry_s():
    from calibrate.memory import _selection_call

    _, moved = _selection_call("topk", 64 * 1024, "cpu", torch.float32)
    # rows of 1024 floats read, 8 values and 8 int64 indices written per row
    assert moved == 64 * 1024 * 4 + 64 * 8 * (4 + 8)


def _pool_memory_s(fn, x, profile, device="cuda"):
    report = analyze(fn, (x,), profile, device=device, batch_sweep=False)
    op = max(report.ops, key=lambda o: o.memory_s)
    return op.memory_s, op.bytes_read + op.bytes_written


def test_gpu_average_and_3d_pooling_price_on_the_pooling_family():
    # one thread per output looping over its window, as max pooling: on the GPU's max-pool family
    slow = 1e10
    profile = _profile_with(_flat_curve("max_pool2d", "float32", slow))
    for fn, x in ((lambda x: torch.nn.functional.avg_pool2d(x, 2, 2), torch.randn(2, 64, 56, 56)),
                  (lambda x: torch.nn.functional.max_pool3d(x, 3, 2, 1), torch.randn(1, 8, 8, 28, 28))):
        t, nbytes = _pool_memory_s(fn, x, profile)
        assert t == pytest.approx(nbytes / slow, rel=1e-6)
    # the CPU's average and max pooling loops differ: there average pooling stays on the bandwidth curves
    cpu = load_profile_file(FIXTURE)
    cpu.host.measurements.pointwise = [c for c in cpu.host.measurements.pointwise if c.op != "max_pool2d"] + [_flat_curve("max_pool2d", "float32", slow)]
    t, nbytes = _pool_memory_s(lambda x: torch.nn.functional.avg_pool2d(x, 2, 2), torch.randn(2, 64, 56, 56), cpu, device="cpu")
    assert t < nbytes / slow / 10


def test_half_precision_pooling_costs_the_float32_op_over_the_same_elements():
    # the H100 zoo record: max_pool2d 3x3/2 over (32, 64, 112, 112) took 105.9 us in fp16 and 104.5 us
    # in fp32 (ResNet stems): the kernel is bound by its elements, not the bytes of its values. The
    # profile calibrates the family in float32 only.
    profile = _profile_with(_flat_curve("max_pool2d", "float32", 1e12))
    pool = lambda x: torch.nn.functional.max_pool2d(x, 3, 2, 1)  # noqa: E731
    fp32_s, _ = _pool_memory_s(pool, torch.randn(2, 64, 56, 56), profile)
    fp16_s, fp16_bytes = _pool_memory_s(pool, torch.randn(2, 64, 56, 56).half(), profile)
    assert fp16_s == pytest.approx(fp32_s, rel=1e-6)
    assert fp16_s > 1.3 * fp16_bytes / 1e12  # priced by its own bytes it would be 0.64x the fp32 op
    # a profile with a half-precision curve prices the op on it, by its own bytes
    own = _profile_with(_flat_curve("max_pool2d", "float32", 1e12), _flat_curve("max_pool2d", "bfloat16", 2e12))
    assert _pool_memory_s(pool, torch.randn(2, 64, 56, 56).half(), own)[0] == pytest.approx(fp16_bytes / 2e12, rel=1e-6)


def test_layer_norm_of_a_strided_input_pays_the_copy_aten_makes_first():
    # ATen's layer_norm makes a strided input contiguous before its kernel (an MLP-Mixer token block,
    # Whisper's transposed convolution output); the profiler counts that copy in the op's time
    profile = load_profile_file(FIXTURE)
    dev = DeviceModel(profile.gpu, "cuda")
    ln = lambda x: torch.nn.functional.layer_norm(x, (768,))  # noqa: E731
    x = torch.randn(8, 768, 196)

    def ln_kernel_s(t):
        report = analyze(ln, (t,), profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if "layer_norm" in o.target]
        return op.kernel_s

    row_major, strided = ln_kernel_s(x.transpose(1, 2).contiguous()), ln_kernel_s(x.transpose(1, 2))
    nbytes = 2 * x.numel() * 4
    assert strided - row_major == pytest.approx(nbytes / dev.bandwidth.bytes_per_s(nbytes, "copy"), rel=1e-6)


def test_gpu_softmax_rows_below_64_run_at_their_next_power_of_two():
    profile = _profile_with(_flat_curve("softmax", "float32", 2e12), _flat_curve("softmax_short", "float32", 1e12))

    def softmax_s(shape, dim=-1):
        report = analyze(lambda a: torch.softmax(a, dim), (torch.randn(*shape),), profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if "softmax" in o.target]
        return op.kernel_s

    assert softmax_s((4096, 49)) == pytest.approx(softmax_s((4096, 64)), rel=0.01)  # a row of 49 runs as one of 64
    assert softmax_s((4096, 600)) < 0.7 * softmax_s((4096, 1024))  # from 64 on, the row's own bytes
    assert softmax_s((4096, 196)) == pytest.approx(softmax_s((4096, 256)) * 196 / 256, rel=0.1)
    assert softmax_s((1024, 1500)) == pytest.approx(1024 * 1500 * 8 / 2e12, rel=0.01)  # past 1024: a block per row, unpadded
    assert softmax_s((49, 4096), dim=0) < softmax_s((64, 4096), dim=0) * 0.9  # not the innermost dimension


def test_gpu_layer_norm_time_is_linear_in_one_over_its_row_length():
    # ATen's vectorized layer norm gives every row a block: over the same bytes its time is a fixed
    # time per row plus a time per element, fixed by the short-row (64) and long-row (1024) curves,
    # and carried below the short row
    profile = _profile_with(_flat_curve("layer_norm", "float32", 2e12), _flat_curve("layer_norm_short", "float32", 1e12))
    elements = 1 << 20

    def ln(row, fn=lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:])):
        """(kernel seconds, bytes) of the op"""
        report = analyze(fn, (torch.randn(elements // row, row),), profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if "layer_norm" in o.target or "softmax" in o.target]
        return op.kernel_s, op.bytes_read + op.bytes_written

    def expected_s(row):
        nbytes = ln(row)[1]
        return nbytes / 2e12 + (nbytes / 1e12 - nbytes / 2e12) * (1 / row - 1 / 1024) / (1 / 64 - 1 / 1024)

    for row in (16, 32, 64, 128, 256, 1024):
        assert ln(row)[0] == pytest.approx(expected_s(row), rel=0.01), row
    assert ln(64)[0] == pytest.approx(ln(64)[1] / 1e12, rel=0.01)
    assert ln(16)[0] > 2.5 * ln(16)[1] / 1e12  # not held at the short row's rate
    # softmax keeps its warp-per-row reading: no time per row below the short row
    softmax = lambda x: torch.softmax(x, -1)  # noqa: E731
    profile.gpu.measurements.pointwise += [_flat_curve("softmax", "float32", 2e12), _flat_curve("softmax_short", "float32", 1e12)]
    assert ln(16, softmax)[0] == pytest.approx(ln(16, softmax)[1] / 1e12, rel=0.02)


def test_gpu_softmax_backward_over_warp_rows_is_two_passes_at_the_binary_rate():
    # the gradient times the output, then the warp kernel: each reads two tensors and writes one
    profile = _profile_with(_flat_curve("add", "float32", 2e12), _flat_curve("softmax", "float32", 0.5e12))

    def backward_s(shape):
        fn = lambda g, y: torch.ops.aten._softmax_backward_data(g, y, -1, g.dtype)  # noqa: E731
        report = analyze(fn, (torch.randn(*shape), torch.randn(*shape)), profile, device="cuda", batch_sweep=False)
        (op,) = [o for o in report.ops if "softmax" in o.target]
        return op.kernel_s

    assert backward_s((4096, 196)) == pytest.approx(2 * 3 * 4096 * 196 * 4 / 2e12, rel=0.01)
    assert backward_s((64, 2048)) > 3 * 64 * 2048 * 4 / 0.5e12 * 0.9  # a block per row past 1024: the family's one pass


def test_gpu_layer_norm_over_empty_rows_is_priced_at_the_long_rows_rate():
    # rows of no elements still write their statistics: their bytes at the long-row family's rate,
    # held at the device's per-kernel floor
    profile = _profile_with(_flat_curve("layer_norm", "float32", 2e12), _flat_curve("layer_norm_short", "float32", 1e12))
    report = analyze(lambda x: torch.nn.functional.layer_norm(x, (0,)), (torch.randn(4096, 0),), profile, device="cuda", batch_sweep=False)
    (op,) = [o for o in report.ops if "layer_norm" in o.target]
    floor_s = DeviceModel(profile.gpu, "cuda").kernel_floor_s
    assert op.kernel_s == pytest.approx(max((op.bytes_read + op.bytes_written) / 2e12, floor_s), rel=0.01)


def test_the_outer_reduction_families_sum_over_the_rows_of_their_columns():
    # each family times x.sum(0) of (rows, width): its bytes are the input read and one row written
    from calibrate.memory import OUTER_REDUCTION_FAMILIES, REDUCTION_FAMILIES, _selection_call
    from roofline.model.kernels import REDUCE_OUTER_WIDTHS

    assert set(OUTER_REDUCTION_FAMILIES) <= set(REDUCTION_FAMILIES) and len(OUTER_REDUCTION_FAMILIES) == len(REDUCE_OUTER_WIDTHS)
    for op, width in zip(OUTER_REDUCTION_FAMILIES, REDUCE_OUTER_WIDTHS):
        fn, moved = _selection_call(op, 1 << 16, "cpu", torch.float32)
        assert tuple(fn().shape) == (width,)
        assert moved == 4 * ((1 << 16) + width)
