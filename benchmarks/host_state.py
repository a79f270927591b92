"""Does the host's speed depend on what the host was doing? The host-speed index read after each state.

    python benchmarks/host_state.py --profile PROFILE [--cycles 20] [--json OUT]

The index (``roofline.measure.host_speed``: calibration's op mix, host issue only) is sampled right
after each of these states, cycled so that all see the same drift of a shared host:

- idle: the thread sleeps 0.2 s;
- GPU wait: the thread waits 0.2 s in a synchronize for long GPU kernels;
- host busy: the thread issues small ops for 0.2 s (then drains them);
- beside a host-bound model and beside a GPU-bound one, as ``--measure`` and the zoo read it.

Each is printed as a scale against the profile's calibrated index (1.0: the host as calibrated).
A CPU that clocks down while its thread sleeps or waits reads slower after those states.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from roofline.measure.host_speed import host_speed_beside, index_call, index_sample_s  # noqa: E402
from roofline.model.host import calibrated_index_s  # noqa: E402
from roofline.profiles import load_profile_file  # noqa: E402

STATE_S = 0.2


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--cycles", type=int, default=20)
    ap.add_argument("--json")
    args = ap.parse_args()
    device = "cuda"
    overheads = load_profile_file(Path(args.profile)).gpu.measurements.overheads
    calibrated = calibrated_index_s(overheads)
    mix = index_call(device, overheads.dispatch_by_op_s)
    big = torch.randn(8192, 8192, device=device)
    small = torch.randn(64, device=device)
    chain = [torch.randn(256, 256, device=device) for _ in range(2)]

    def gpu_wait():
        end = time.perf_counter() + STATE_S
        while time.perf_counter() < end:
            big @ big
            torch.cuda.synchronize()

    def host_busy():
        end = time.perf_counter() + STATE_S
        while time.perf_counter() < end:
            for _ in range(50):
                small.add_(1.0)
        torch.cuda.synchronize()

    def host_bound_model():  # 40 small ops: the host issues, the device waits
        x = chain[0]
        for _ in range(20):
            x = torch.relu(x @ chain[1])
        torch.cuda.synchronize()

    def gpu_bound_model():  # one long kernel
        big @ big
        torch.cuda.synchronize()

    states = {"idle": lambda: time.sleep(STATE_S), "GPU wait": gpu_wait, "host busy": host_busy}
    got: dict[str, list[float]] = {k: [] for k in [*states, "beside a host-bound model", "beside a GPU-bound model"]}
    with torch.no_grad():
        for _ in range(30):
            mix()
        torch.cuda.synchronize()
        for _ in range(args.cycles):
            for name, state in states.items():
                state()
                got[name].append(index_sample_s(mix) / calibrated)
            for name, model in (("beside a host-bound model", host_bound_model), ("beside a GPU-bound model", gpu_bound_model)):
                _, speed = host_speed_beside(model, device, overheads, budget_s=0.1)
                got[name].append(speed.scale)
    print(f"{torch.cuda.get_device_name()}, profile {Path(args.profile).name}: host-speed index after each state, x calibration's")
    for name, xs in got.items():
        q = statistics.quantiles(xs, n=4)
        print(f"  {name:<28} median x{statistics.median(xs):.3f}  (quartiles x{q[0]:.3f}-x{q[2]:.3f}, {len(xs)} readings)")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(device=torch.cuda.get_device_name(), date=time.strftime("%Y-%m-%d %H:%M"), readings=got), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
