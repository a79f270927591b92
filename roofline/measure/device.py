"""Which device ``--measure`` runs on, after checking that this machine is the profile's machine:
comparing a profile's predictions with another machine's timings would measure the difference
between the machines, not the model."""

from __future__ import annotations

import torch

from roofline.errors import DeviceNotAvailable, ProfileError
from roofline.machine import cpu_identity
from roofline.schema.profile import DeviceProfile


def device_for(profile: DeviceProfile, kind: str, purpose: str = "--measure") -> str:
    """The torch device to measure on ('cuda:N' or 'cpu'); a profile of another machine is refused.
    ``purpose`` names the flag that needs the device, in the refusal."""
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise DeviceNotAvailable(
                f"{purpose} needs the profile's GPU ({profile.gpu.identity.name}) but torch sees no CUDA device here; "
                f"drop {purpose} to predict only, or run on that machine"
            )
        want = profile.gpu.identity.name
        for index in range(torch.cuda.device_count()):
            if torch.cuda.get_device_name(index) == want:
                return f"cuda:{index}"
        here = torch.cuda.get_device_name(0)
        raise ProfileError(
            f"{purpose}: profile '{profile.name}' describes a {want} but this machine has a {here}; "
            "calibrate this machine (`roofline calibrate`) and use its profile"
        )
    here = cpu_identity(torch.get_num_threads())
    want = profile.host.identity
    if here.model != want.model or here.logical_cpus != want.logical_cpus:
        raise ProfileError(
            f"{purpose}: profile '{profile.name}' describes a CPU '{want.model}' with {want.logical_cpus} CPUs but this "
            f"machine has '{here.model}' with {here.logical_cpus}; run `roofline calibrate --device cpu` here and use that profile"
        )
    return "cpu"
