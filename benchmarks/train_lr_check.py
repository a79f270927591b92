"""Training-step time on the GPU with the optimizer at learning rate 0, as ``roofline.measure.train``
runs it, against 1e-3: whether a step's time depends on the values the learning rate changes.

    python benchmarks/train_lr_check.py

Seven of ``train_check.py``'s cases, foreach AdamW; each pair of optimizers is timed alternately
three times by the shared protocol, and the medians printed with their ratio.
"""
import statistics
import sys
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import torch  # noqa: E402
from train_check import all_cases  # noqa: E402

from roofline.graph.training import TrainStep, make_optimizer  # noqa: E402
from roofline.measure.train import RealStep  # noqa: E402
from roofline.timing import time_fn  # noqa: E402

CASES = ("small_mlp", "small_cnn", "gpt_block", "resnet_cnn", "zoo:tv_resnet18", "zoo:hf_gpt2", "zoo:mixer_mlp_hand")


def timed(real) -> float:
    """The median step by the shared protocol (``roofline.timing``): warm-up, then rounds; a step
    ends in a synchronize, so the host clock times it whole."""
    return time_fn(real, device="cuda", clock="host", inner=1, budget_s=0.3, warmup_budget_s=0.1, min_samples=20).stat().median_s


def main() -> None:
    for case in all_cases():
        if case.name not in CASES:
            continue
        model, args, kwargs = case.build()
        step = TrainStep(implementation="foreach")
        real = RealStep(model, args, kwargs, step, "cuda")  # lr 0
        with_lr = make_optimizer(real.params, replace(step, lr=1e-3))
        zero = real.optimizer
        res = {"lr0": [], "lr1e-3": []}
        for _ in range(3):
            real.optimizer = zero
            res["lr0"].append(timed(real))
            real.optimizer = with_lr
            res["lr1e-3"].append(timed(real))
        a, b = statistics.median(res["lr0"]), statistics.median(res["lr1e-3"])
        print(f"{case.name:24s} lr 0 {a*1e3:8.3f} ms   lr 1e-3 {b*1e3:8.3f} ms   ratio {a/b:.3f}", flush=True)
        del model, real, with_lr, zero
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
