"""Micro-benchmarks that measure a machine's ceilings and fill a ``roofline.schema.profile.DeviceProfile``."""

from calibrate.runner import run_calibration  # noqa: F401
