"""The Python calls of each case's own code, per op, for a zoo record captured before the capture
counted them (``roofline.graph.pycalls``): a file beside the record that ``--replay`` reads.

    python benchmarks/zoo/python_calls.py RECORD.json
    python benchmarks/zoo/python_calls.py --check RECORD.json cuda LABEL ...   (count here, against the file)

Each case whose model builds here (its library installed) is captured again on this machine; the
count of Python calls of the model's own code before each op does not depend on the machine, only on
the library versions, which the file records. Where this capture's ops are the record's (same names
in order), the counts go to the same ops; otherwise (the GPU's attention kernels against the CPU's)
each count goes to the op at the same relative position. Run it once in each environment that has
some of the libraries (torchvision and timm install with the CUDA build of torch only): cases already
in the file are kept.
"""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from roofline.graph.capture import capture  # noqa: E402
from roofline.graph.serialize import graph_from_dict  # noqa: E402


def sidecar_path(record: Path) -> Path:
    return record.with_name(record.stem + "_python_calls.json")


def aligned(local_names: list[str], local_calls: list[int], record_names: list[str]) -> tuple[list[int], bool]:
    """The local capture's per-op counts on the record's ops, and whether the op sequences matched."""
    if local_names == record_names:
        return list(local_calls), True
    out = [0] * len(record_names)
    n, m = len(local_names), len(record_names)
    for i, calls in enumerate(local_calls):
        if calls and m:
            out[min(m - 1, round(i * (m - 1) / max(n - 1, 1)))] += calls
    return out, False


def versions() -> dict[str, str]:
    out = {"torch": torch.__version__}
    for name in ("transformers", "torchvision", "timm"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return out


def check(record_path: Path, labels: list[str], device: str) -> int:
    """Count the listed cases here (capturing on ``device``) against the file beside the record: the
    counts depend on the libraries' versions, not on the machine."""
    from benchmarks.zoo.registry import cases

    stored = json.loads(sidecar_path(record_path).read_text())
    by_label = {c.label: c for c in cases()}
    print(f"here: {versions()}; the file: {stored['counted_with']}")
    for label in labels:
        case = by_label[label]
        with torch.device("meta"):
            model, a, k = case.model.build(case.batch, case.dtype)
        graph = capture(model, a, k, device=device)
        here, there = sum(op.python_calls for op in graph.ops), sum(stored["cases"].get(label, []))
        print(f"{label:<36} here {here:6d}  in the file {there:6d}  ({100 * (here - there) / max(there, 1):+.1f}%)")
    return 0


def main(argv: list[str]) -> int:
    from benchmarks.zoo.registry import cases

    if argv and argv[0] == "--check":  # --check RECORD DEVICE LABEL ...
        return check(Path(argv[1]), argv[3:], argv[2])
    record_path = Path(argv[0])
    record = json.loads(record_path.read_text())
    with gzip.open(record_path.parent / record["graphs_file"], "rt") as f:
        graphs = json.load(f)["graphs"]
    out_path = sidecar_path(record_path)
    out = json.loads(out_path.read_text()) if out_path.exists() else {"cases": {}, "counted_with": []}
    by_label = {c.label: c for c in cases()}
    here = dict(versions(), date=time.strftime("%Y-%m-%d"), cases=0, same_ops=0)
    for row in record["rows"]:
        label = row["label"]
        if label in out["cases"] or label not in by_label:
            continue
        case = by_label[label]
        with torch.device("meta"):
            model, a, k = case.model.build(case.batch, case.dtype)
        try:
            graph = capture(model, a, k)
        except Exception as e:  # noqa: BLE001 - a case that does not capture here stays without counts
            print(f"{label}: not counted ({type(e).__name__}: {str(e)[:120]})")
            continue
        names = [op.name for op in graph_from_dict(graphs[label]).ops]
        counts, same = aligned([op.name for op in graph.ops], [op.python_calls for op in graph.ops], names)
        out["cases"][label] = counts
        here["cases"] += 1
        here["same_ops"] += int(same)
        print(f"{label:<36} {sum(counts):6d} Python calls over {len(names)} ops ({'same ops' if same else 'by position'})", flush=True)
    if here["cases"]:
        out["counted_with"].append(here)
    out_path.write_text(json.dumps(out, separators=(",", ":")))
    print(f"wrote {out_path}: {len(out['cases'])} of {len(record['rows'])} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
