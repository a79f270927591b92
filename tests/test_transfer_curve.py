"""Host<->device copy pricing: measured points read directly, a fresh-destination jump kept."""

import pytest

from roofline.model.curves import transfer_s
from roofline.schema.profile import Stat, TransferCurve, TransferPoint


def _curve(points_ms: dict[int, float], **kw) -> TransferCurve:
    pts = [TransferPoint(bytes=n, time=Stat(median_s=t * 1e-3, iqr_s=0.0, samples=5), bytes_per_s=n / (t * 1e-3)) for n, t in points_ms.items()]
    return TransferCurve(direction="d2h", host_memory="pageable", points=pts, latency_s=20e-6, bandwidth_bytes_per_s=1e10, **kw)


MIB = 1 << 20
# the shape the H100 host showed (run 18): ~13 GB/s up to 16 MiB, then page faults at ~1.5 GB/s
FRESH = _curve({1 << 10: 0.02, 16 * MIB: 1.6, 32 * MIB: 24.0, 64 * MIB: 45.5, 256 * MIB: 160.0}, fresh_destination=True)


def test_measured_sizes_give_their_measured_times():
    for p in FRESH.points:
        assert transfer_s(FRESH, p.bytes) == pytest.approx(p.time.median_s)


def test_between_points_is_linear_in_bytes_so_the_fault_jump_stays():
    assert transfer_s(FRESH, 24 * MIB) == pytest.approx((1.6 + 24.0) / 2 * 1e-3)
    # a fitted line through these points would put 8 MiB far above what the 16 MiB point shows
    assert transfer_s(FRESH, 8 * MIB) < 1.6e-3


def test_below_the_smallest_and_beyond_the_largest_point():
    assert transfer_s(FRESH, 10) == pytest.approx(0.02e-3)
    assert transfer_s(FRESH, 1024 * MIB) == pytest.approx(4 * 160.0e-3)


def test_fresh_destination_defaults_to_false_for_old_profiles():
    assert _curve({1 << 10: 0.02, MIB: 0.1}).fresh_destination is False
