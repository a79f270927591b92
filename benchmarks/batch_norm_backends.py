"""Which backend ATen picks for a GPU batch norm forward, recorded, against the model's rule.

    python benchmarks/batch_norm_backends.py --measure OUT.json   # on the GPU: ATen's choice per case
    python benchmarks/batch_norm_backends.py --check OUT.json     # anywhere: the rule against it

The cases cross the input dtype (float32, float16, bfloat16), the weights' dtype (the input's, as
``model.half()`` leaves them, or float32, as autocast does), 2-d and 4-d inputs, eval and training,
and an eval batch past cuDNN's limit. ``torch._C._select_batch_norm_backend`` names the backend
(Cudnn, Native, Miopen); ``roofline.model.kernels.runs_cudnn_batch_norm`` decides it from a capture's
operands, and ``--check`` prints each case and the disagreements.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from benchmarks.sweep_checks import DTYPES, record_check_main  # noqa: E402

DTYPE_ORDER = ("float32", "float16", "bfloat16")  # the recorded cases' order
SHAPES = {"4d": (8, 16, 7, 7), "2d": (8, 16), "4d past eval limit": (65536, 2, 1, 1)}


def _cases() -> list[dict]:
    cases = []
    for dtype in DTYPE_ORDER:
        for weights in dict.fromkeys((dtype, "float32")):
            for shape in SHAPES:
                for training in (False, True):
                    cases.append(dict(dtype=dtype, weights=weights, shape=shape, training=training))
    return cases


def _operands(case: dict, device: str):
    x = torch.randn(*SHAPES[case["shape"]], device=device, dtype=DTYPES[case["dtype"]])
    c = x.shape[1]
    w, b = (torch.rand(c, device=device, dtype=DTYPES[case["weights"]]) for _ in range(2))
    mean, var = torch.zeros(c, device=device, dtype=DTYPES[case["weights"]]), torch.ones(c, device=device, dtype=DTYPES[case["weights"]])
    return x, w, b, mean, var


def measure(out: Path) -> None:
    cases = _cases()
    for case in cases:
        x, w, b, mean, var = _operands(case, "cuda")
        case["backend"] = str(torch._C._select_batch_norm_backend(x, w, b, mean, var, case["training"], 1e-5)).rsplit(".", 1)[-1]
        print(case, flush=True)
    out.write_text(json.dumps(dict(device=torch.cuda.get_device_name(), torch=torch.__version__,
                                   cudnn=torch.backends.cudnn.version(), cases=cases), indent=1))


def rule_says_cudnn(case: dict) -> bool:
    """The model's rule on the case captured on this machine (fake tensors on the meta device)."""
    from roofline.graph.capture import capture
    from roofline.model.kernels import runs_cudnn_batch_norm

    x, w, b, mean, var = _operands(case, "cpu")
    graph = capture(lambda x, w, b, mean, var: F.batch_norm(x, mean, var, w, b, case["training"]), (x, w, b, mean, var))
    (op,) = [op for op in graph.ops if "batch_norm" in op.name]
    return runs_cudnn_batch_norm(op)


def check(path: Path) -> int:
    record = json.loads(path.read_text())
    wrong = 0
    print(f"{record['device']}, torch {record['torch']}, cuDNN {record['cudnn']}")
    for case in record["cases"]:
        ours = "Cudnn" if rule_says_cudnn(case) else "Native"
        wrong += ours != case["backend"]
        print(f"  {case['dtype']:<8} weights {case['weights']:<8} {case['shape']:<18} {'train' if case['training'] else 'eval':<5} "
              f"ATen {case['backend']:<6} rule {ours}{'' if ours == case['backend'] else '  <- differs'}")
    print(f"batch_norm_backends: {len(record['cases']) - wrong} of {len(record['cases'])} agree")
    return 0


if __name__ == "__main__":
    sys.exit(record_check_main(__doc__, measure, check))
