"""roofline: where a PyTorch model's time goes on a calibrated device, and what to do about it."""

__version__ = "0.1.0"

__all__ = ["Advisor", "analyze"]


def __getattr__(name):
    # imported on first use: ``import roofline`` stays cheap for the CLI
    if name == "Advisor":
        from roofline.advisor import Advisor

        return Advisor
    raise AttributeError(f"module 'roofline' has no attribute {name!r}")


def analyze(model, example_inputs=(), profile=None, **kwargs):
    """Capture ``model`` on ``example_inputs`` (a tuple of positional inputs, or a dict of keyword
    inputs), price and predict every op; returns a ``Report``.

    ``profile`` is a ``DeviceProfile``, a profile name or path, or None for the newest saved one.
    See ``roofline.pipeline.analyze`` for the keyword arguments.
    """
    from roofline.pipeline import analyze as _analyze

    return _analyze(model, example_inputs, profile, **kwargs)
