"""User-facing errors.

Anything the user can fix (a bad model file, a missing device, a corrupt profile) raises
``RooflineError`` with one line that names the problem and the fix. The CLI prints that line and
exits non-zero without a traceback; every other exception is a bug and keeps its traceback.
"""


class RooflineError(Exception):
    """A problem with the user's input or machine, described in one actionable line."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class DeviceNotAvailable(RooflineError):
    """The requested device is not present on this machine."""


class ProfileError(RooflineError):
    """A profile file is missing, corrupt, or not a roofline profile."""


class ModelFileError(RooflineError):
    """The model file cannot be loaded or does not follow the model-file convention."""


class CaptureError(RooflineError):
    """The model could not be captured into a graph of aten ops."""
