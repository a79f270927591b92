"""What slows a training step's forward phase beyond the same forward repeated alone, on a GPU.

    python3 benchmarks/train_phases.py --measure OUT.json [--profile P] [--only CASE ...]   # on the GPU machine
    python3 benchmarks/train_phases.py --show RECORD.json [--profile P --graphs G]   # anywhere; with P and G
        (a train_check.py --per-op record's graphs) each case's forward phase priced on P beside the record

``--measure --train`` times each phase of a step between synchronizes (``roofline.measure.train``);
calibration prices a phase from hot loops and multiplies its host costs by a factor a small probe
model showed (``roofline.measure.training_host.phase_switch``). This probe times, for the calibration's
probe model and cases of ``benchmarks/train_check.py``, the forward with its loss (a synchronize
before and after; the host's return from the loss's launch beside it):

- ``in_step``: in whole steps, as ``--measure --train`` times it (after zero_grad; the optimizer step
  and backward of the step before);
- ``alone``: repeated alone with grad (the graph dropped), as the calibration probe's denominator;
- ``no_grad``: repeated alone under no_grad;
- ``eval_no_grad``: repeated alone under no_grad with the model in eval mode, as an inference forward runs;
- ``after_backward``: in steps without the optimizer step (zero_grad, forward, backward);
- ``after_optimizer``: each after an optimizer step over the gradients a backward left (no backward between);
- ``after_sleep``: each after the host slept ``SLEEP_S`` (its CPU idle, the device idle);
- ``after_thrash``: each after the host wrote ``THRASH_BYTES`` of memory (its caches evicted).

Which variant comes near ``in_step`` says what the step's phase switch is: the optimizer's work, the
backward's, a cold cache, or an idle host. With ``--profile P`` the eval forward (no loss) is also
timed as the zoo times a forward, beside the host-speed index against P's (``host_speed_beside``),
before the case's first training step and after its last: whether training steps leave the process
slower at the same host speed.
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

REPEATS = 25
SLEEP_S = 0.003
THRASH_BYTES = 64 << 20
DEFAULT_CASES = ["probe", "small_mlp", "small_cnn", "mlp_tiny", "gpt_block", "zoo:tv_resnet18", "zoo:tv_mobilenet_v2",
                 "zoo:nn_transformer_encoder", "zoo:tcn_conv1d", "zoo:hf_gpt2"]
VARIANTS = ("in_step", "alone", "no_grad", "eval_no_grad", "after_backward", "after_optimizer", "after_sleep", "after_thrash")
PROFILED = ("alone", "eval_no_grad")  # the variants --anatomy profiles


def probe_case():
    """The calibration's phase-switch probe model (``roofline.measure.training_host``)."""
    from roofline.measure.training_host import PROBE_BATCH, PROBE_LAYERS, PROBE_WIDTH
    torch.manual_seed(0)
    layers = []
    for _ in range(PROBE_LAYERS):
        layers += [torch.nn.Linear(PROBE_WIDTH, PROBE_WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers), (torch.randn(PROBE_BATCH, PROBE_WIDTH),), {}


def eval_beside(real, overheads) -> dict:
    """The model's eval forward (no loss) under no_grad, timed beside the host-speed index as the zoo
    times a forward: median wall us and the index's scale against the profile."""
    from roofline.measure.host_speed import host_speed_beside

    def call():
        real.model(*real.args, **real.kwargs)
        torch.cuda.synchronize()

    real.model.eval()
    try:
        timing, speed = host_speed_beside(call, "cuda", overheads)
    finally:
        real.model.train()
    return dict(wall_us=1e6 * timing.stat().median_s, scale=speed.scale)


def measure_case(build, with_anatomy: bool = False, overheads=None) -> dict:
    from roofline.graph.training import TrainStep
    from roofline.measure.host_speed import warm_up
    from roofline.measure.train import RealStep, _phases

    model, args, kwargs = build()
    real = RealStep(model, args, kwargs, TrainStep(optimizer="adamw", implementation="foreach"), "cuda")
    before = eval_beside(real, overheads) if overheads is not None else None
    warm_up(real, seconds=0.3, at_least=3)
    sink = bytearray(THRASH_BYTES)

    def forward(grad: bool = True):
        with torch.set_grad_enabled(grad):
            return real.loss_of(real.model(*real.args, **real.kwargs))

    def timed_forward(grad: bool = True):
        """((wall to the synchronize after it, host's return), the loss) of one forward from an idle device."""
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        loss = forward(grad)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0, t1 - t0), loss

    def timed(before=None, grad=True, eval_mode=False) -> tuple[float, float]:
        if before is not None:
            before()
        real.model.train(not eval_mode)
        sample, _ = timed_forward(grad)
        real.model.train()
        return sample

    def thrash():
        for i in range(0, THRASH_BYTES, 64):
            sink[i] = (sink[i] + 1) & 255

    def steps(optimizer_step: bool) -> list[tuple[float, float]]:
        """The forward timed in ``REPEATS`` steps (zero_grad, forward, backward, with or without the optimizer step)."""
        out = []
        for _ in range(REPEATS):
            real.optimizer.zero_grad(set_to_none=True)
            sample, loss = timed_forward()
            out.append(sample)
            loss.backward()
            if optimizer_step:
                real.optimizer.step()
        return out

    samples: dict[str, list[tuple[float, float]]] = {v: [] for v in VARIANTS}
    samples["in_step"] = steps(optimizer_step=True)
    for _ in range(REPEATS):
        samples["alone"].append(timed())
        samples["no_grad"].append(timed(grad=False))
        samples["eval_no_grad"].append(timed(grad=False, eval_mode=True))
        samples["after_sleep"].append(timed(lambda: time.sleep(SLEEP_S)))
        samples["after_thrash"].append(timed(thrash))
    samples["after_backward"] = steps(optimizer_step=False)
    for _ in range(REPEATS):  # the gradients of the last backward stay: an optimizer step, then the forward alone
        samples["after_optimizer"].append(timed(real.optimizer.step))
    phases = _phases(real)
    after = eval_beside(real, overheads) if overheads is not None else None
    anatomy = {v: profiled(forward, real.model, v) for v in PROFILED} if with_anatomy else None
    out = {v: dict(wall_us=1e6 * statistics.median(w for w, _ in s), host_us=1e6 * statistics.median(h for _, h in s))
           for v, s in samples.items()}
    del real, model
    torch.cuda.empty_cache()
    return dict(variants=out, phases_us={k: 1e6 * v for k, v in phases.items()}, anatomy=anatomy, eval_before=before, eval_after=after)


ANATOMY_ROWS = 14


def profiled(forward, model, variant: str) -> list[dict]:
    """One forward of ``variant`` (``alone``: train mode with grad; ``eval_no_grad``) under
    torch.profiler (CPU and CUDA activity): the host's busiest events by self CPU time, the CUDA
    runtime's calls among them, each with its call count."""
    import torch.profiler as tp
    model.train(variant != "eval_no_grad")
    grad = variant == "alone"
    forward(grad)  # once outside, so that the profiled call finds everything warm
    torch.cuda.synchronize()
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA]) as prof:
        forward(grad)
        torch.cuda.synchronize()
    model.train()
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:ANATOMY_ROWS]
    return [dict(name=e.key, calls=e.count, self_cpu_us=e.self_cpu_time_total) for e in events]


def forward_priced_us(profile, graphs: dict) -> dict[str, tuple[float, float]]:
    """Per case with a captured training step in ``graphs`` (a ``train_check.py --per-op`` record's),
    the forward phase priced on ``profile``: (alone between synchronizations, inside the step) in us."""
    from roofline.graph.serialize import graph_from_dict
    from roofline.graph.training import TrainStep
    from roofline.pipeline import Analysis, Options, resolve_profile

    prof, kind = resolve_profile(profile, "cuda")
    out = {}
    for name, stored in graphs.items():
        analysis = Analysis(graph_from_dict(stored), prof, kind, Options(device=kind, train=TrainStep(optimizer="adamw"), batch_sweep=False,
                                                                            capture_device="cpu"), name=name)
        (phase,) = [p for p in analysis.training.phases if p.phase == "forward"]
        out[name] = (1e6 * phase.alone_s, 1e6 * phase.predicted_s)
    return out


def show(record: dict, priced: dict | None = None) -> None:
    if record.get("note"):
        print(f"note: {record['note']}")
    print(f"forward + loss on {record['device']} (torch {record['torch']}, {record['date']}): median wall us (host's return us); x of alone")
    variants = [v for v in VARIANTS if all(v in r["variants"] for r in record["cases"].values())]
    print(f"{'case':28s}" + "".join(f"{v:>20s}" for v in variants))
    for name, r in record["cases"].items():
        alone = r["variants"]["alone"]["wall_us"]
        cells = [f"{r['variants'][v]['wall_us']:8.0f} ({r['variants'][v]['host_us']:5.0f}) x{r['variants'][v]['wall_us'] / alone:.2f}" for v in variants]
        print(f"{name:28s}" + "".join(f"{c:>20s}" for c in cells))
        if priced and name in priced:
            alone_us, in_step_us = priced[name]
            print(f"  priced: alone {alone_us:.0f} us ({100 * (alone_us / alone - 1):+.0f}% of alone), in the step {in_step_us:.0f} us "
                  f"({100 * (in_step_us / r['variants']['in_step']['wall_us'] - 1):+.0f}% of in_step)")
        if r.get("eval_before"):
            b, a = r["eval_before"], r["eval_after"]
            print(f"  eval forward beside the index: before training {b['wall_us']:.0f} us at x{b['scale']:.2f}, after {a['wall_us']:.0f} us at x{a['scale']:.2f}")
        for variant, rows in (r.get("anatomy") or {}).items():
            print(f"  {variant}, one profiled forward: " + "; ".join(f"{e['name']} x{e['calls']} {e['self_cpu_us']:.0f} us" for e in rows))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measure", metavar="OUT.json")
    ap.add_argument("--show", metavar="RECORD.json")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--profile", help="--measure: time the eval forward beside the host-speed index against this profile's; "
                                      "--show with --graphs: price each case's forward phase on it")
    ap.add_argument("--graphs", metavar="GRAPHS.json.gz", help="with --show and --profile: the captured training steps of a "
                                                               "train_check.py --per-op record")
    ap.add_argument("--anatomy", nargs="*", default=[], metavar="CASE",
                    help="cases whose alone and eval forwards are also profiled, one each, after the case's timings (a profiler session "
                         "slows the process's later launches, pytorch/pytorch#144455: profile in a process of its own)")
    args = ap.parse_args(argv)
    if args.show:
        priced = None
        if args.profile and args.graphs:
            import gzip

            priced = forward_priced_us(args.profile, json.loads(gzip.decompress(Path(args.graphs).read_bytes())))
        show(json.loads(Path(args.show).read_text()), priced)
        return 0
    if not args.measure:
        ap.error("--measure OUT.json or --show RECORD.json")
    from benchmarks.sweep_checks import refused_without_cuda

    if refused_without_cuda("train_phases.py"):
        return 2
    from benchmarks.train_check import all_cases
    builds = {"probe": probe_case, **{c.name: c.build for c in all_cases() if c.build is not None}}
    overheads = None
    if args.profile:
        from roofline.pipeline import resolve_profile

        overheads = resolve_profile(args.profile, "cuda")[0].gpu.measurements.overheads
    record = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, date=time.strftime("%Y-%m-%d"), cases={})
    for name in args.only or DEFAULT_CASES:
        if name not in builds:
            print(f"{name}: not a case here", flush=True)
            continue
        record["cases"][name] = measure_case(builds[name], with_anatomy=name in args.anatomy, overheads=overheads)
        Path(args.measure).write_text(json.dumps(record, indent=1))
        show(dict(record, cases={name: record["cases"][name]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
