"""A training step's forward phase against the same forward and loss run alone, on a GPU.

    python3 benchmarks/train_phases.py CASE ...      (case names of benchmarks/train_check.py)

Prints the step's phases as ``--measure --train`` times them (``roofline.measure.train``), the forward
and loss repeated alone (with grad, the graph dropped each time; and under no_grad), the allocator's
new segments over one step, and the host's busiest operations over one profiled step. A forward phase
well above the forward run alone is time the step's phase switches cost the host.
"""
import sys, time, statistics, torch
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent.parent))
from benchmarks.train_check import all_cases
from roofline.graph.training import TrainStep
from roofline.measure.train import RealStep, _phases
from roofline.measure.host_speed import warm_up

def timed(fn, n=50):
    out = []
    for _ in range(n):
        torch.cuda.synchronize(); t0 = time.perf_counter(); fn(); torch.cuda.synchronize(); out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e6

for c in all_cases():
    if c.name not in sys.argv[1:]: continue
    model, args, kwargs = c.build()
    real = RealStep(model, args, kwargs, TrainStep(optimizer="adamw", implementation="foreach"), "cuda")
    warm_up(real, seconds=0.3, at_least=3)
    ph = _phases(real)
    print(c.name, "phases us", {k: round(v * 1e6, 1) for k, v in ph.items()})
    def fwd_loss():
        with torch.enable_grad():
            return real.loss_of(real.model(*real.args, **real.kwargs))
    print(c.name, "forward+loss alone, repeated (graph dropped):", round(timed(fwd_loss), 1), "us")
    def fwd_loss_nograd():
        with torch.no_grad():
            return real.loss_of(real.model(*real.args, **real.kwargs))
    print(c.name, "forward+loss no_grad:", round(timed(fwd_loss_nograd), 1), "us")
    # phases again, with the allocator's stats around one step
    torch.cuda.synchronize()
    s0 = torch.cuda.memory_stats()
    real()
    s1 = torch.cuda.memory_stats()
    print(c.name, "cudaMalloc calls in one step:", s1.get("num_alloc_retries", 0) - s0.get("num_alloc_retries", 0), "segments +", s1["segment.all.allocated"] - s0["segment.all.allocated"])
    import torch.profiler as tp
    with tp.profile(activities=[tp.ProfilerActivity.CPU, tp.ProfilerActivity.CUDA]) as prof:
        real.optimizer.zero_grad(set_to_none=True); real.stamps = []; real.run_after_zero_grad(); real.stamps = None
    ev = sorted([e for e in prof.key_averages()], key=lambda e: -e.self_cpu_time_total)[:12]
    for e in ev: print(f"   {e.key[:50]:<50} calls {e.count:4d} self cpu {e.self_cpu_time_total:9.1f} us")
    del real, model; torch.cuda.empty_cache()
