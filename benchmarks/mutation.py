"""Mutation score: do the tests notice when a formula of the cost registry (or the model of time) is wrong?

Each mutant changes one thing in one source file: an arithmetic operator (``+`` and ``-``, ``*`` and
``/``, ``//`` to ``*``, ``%`` to ``//``, ``**`` to ``*``), an augmented assignment (``+=`` and ``-=``), a
comparison (``==`` and ``!=``, ``<`` and ``<=``, ``>`` and ``>=``, ``in`` and ``not in``, ``is`` and ``is
not``), a boolean operator (``and`` and ``or``), a ``not`` or a unary minus dropped, a number (``n`` to
``n + 1``) or a boolean flipped. The package's tests then run against it: the mutant is killed when
they fail (a crash, a time-out, an error collecting them and a package that no longer imports count as
failures), and it survives when they pass. Only a failure without any mutant (the unmutated baseline, or
the child's own set-up) stops the run. The score is
killed / (mutants - equivalent mutants); the equivalent ones (a change no input can observe) are listed
below with the reason, and are reported apart.

The shared working tree is never written to: ``roofline/`` and ``tests/`` are copied into a temporary
directory per worker, each mutant is written into that copy, and the tests run there with the copy
first on the import path (each run is a fork of a process that has imported torch and pytest, but not
roofline, so every run imports the mutated package afresh).

    python benchmarks/mutation.py                    # roofline/costs (the bar: 90 %)
    python benchmarks/mutation.py --package model    # roofline/model
    python benchmarks/mutation.py --files matmul.py conv.py --jobs 2
    python benchmarks/mutation.py --count            # how many mutants, without running them
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent

# The tests each package's mutants run against (``-x`` stops at the first failure). A mutant first meets
# the quick ones (its file's own cases of tests/test_every_op.py first, then its family's test file),
# and the whole list only if it survives them.
QUICK = {"costs": ["tests/test_every_op.py", "tests/test_costs_{stem}.py"], "model": []}
TESTS = {
    "costs": ["tests/test_every_op.py", "tests/test_costs_*.py", "tests/test_flop_counter_agreement.py",
              "tests/test_flop_counter_backward.py"],
    "model": ["tests/test_predict.py", "tests/test_family_curves.py", "tests/test_conv_curve.py", "tests/test_rnn_curve.py",
              "tests/test_transfer_curve.py", "tests/test_kernel_table.py", "tests/test_compiled_costs.py",
              "tests/test_mechanisms.py", "tests/test_padding.py", "tests/test_advice.py", "tests/test_host_sync.py"],
}



class Equivalent(NamedTuple):
    """Mutants no input can tell from the original: in ``file`` ("*": any), on a line containing ``line``, this change."""

    file: str
    line: str
    change: str
    reason: str

    def matches(self, m: "Mutant") -> bool:
        return (self.file == "*" or m.file.endswith("/" + self.file)) and self.line in m.source_line and m.change == self.change


EQUIVALENT: list[Equivalent] = [
    Equivalent("pointwise.py", "@register(*_packets({", "1 -> 2",
               "the dict's values are never read: _packets takes its names only (each formula prices its own FLOPs)"),
    Equivalent("pointwise.py", "return 0", "0 -> 1",
               "output_elements is called only by elementwise_cost, which has returned already when the op has "
               "neither outputs nor tensor inputs: this line is never reached"),
    Equivalent("pointwise.py", "if n > 1 else 0  # square-and-multiply", "n > 1 -> n >= 1",
               "n = 1 gives 0 multiplications either way: bit_length 1 - 1 + one set bit - 1 = 0"),
    Equivalent("pointwise.py", "(1 if exponent < 0 else 0)", "exponent < 0 -> exponent <= 0",
               "exponent 0 has no multiplication (n = 0): max(1, 0 + 1) = max(1, 0 + 0) = 1"),
    Equivalent("dropout.py", "mask_elems = x.shape[0] * x.shape[1] if x.ndim >= 2", "x.ndim >= 2 -> x.ndim > 2",
               "for a 2-D input N * C is all its elements, what the else branch gives"),
    Equivalent("dropout.py", "mask_elems = x.shape[0] * x.shape[1] if x.ndim >= 2", "2 -> 3",
               "x.ndim >= 3 differs from x.ndim >= 2 only for 2-D inputs, where N * C = numel either way"),
    Equivalent("embedding.py", "_MODE_SUM, _MODE_MEAN, _MODE_MAX = 0, 1, 2", "0 -> 1",
               "_MODE_SUM is never read (only the mean mode adds a divide)"),
    Equivalent("embedding.py", "_MODE_SUM, _MODE_MEAN, _MODE_MAX = 0, 1, 2", "2 -> 3",
               "_MODE_MAX is never read (only the mean mode adds a divide)"),
]


@dataclass(frozen=True)
class Mutant:
    file: str  # relative to the repository, e.g. roofline/costs/matmul.py
    line: int
    source_line: str  # the line as written, stripped
    change: str  # e.g. "a + b -> a - b"
    index: int  # the n-th mutation site of the file, in walk order

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def equivalent(self) -> bool:
        return any(e.matches(self) for e in EQUIVALENT)


_BINOP_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Mult,
                ast.Mod: ast.FloorDiv, ast.Pow: ast.Mult, ast.LShift: ast.RShift, ast.RShift: ast.LShift,
                ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
_CMP_SWAPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
              ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """Nodes inside type annotations: changing them changes nothing at run time."""
    ids = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            annotations.append(node.returns)
            args = node.args
            annotations += [a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a]
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for a in annotations:
            if a is not None:
                ids.update(id(n) for n in ast.walk(a))
    return ids


def _sites(tree: ast.AST):
    """Every mutation site of a module, in a fixed order: (node, describe, apply, undo)."""
    skip = _docstring_nodes(tree) | _annotation_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _BINOP_SWAPS:
            if isinstance(node, ast.AugAssign) and type(node.op) not in (ast.Add, ast.Sub):
                continue
            yield node, "op", type(node.op), _BINOP_SWAPS[type(node.op)]
        elif isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                if type(op) in _CMP_SWAPS:
                    yield node, f"cmp{i}", type(op), _CMP_SWAPS[type(op)]
        elif isinstance(node, ast.BoolOp):
            yield node, "boolop", type(node.op), ast.Or if isinstance(node.op, ast.And) else ast.And
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
            yield node, "drop-unary", None, None
        elif isinstance(node, ast.Constant) and not isinstance(node.value, str):
            v = node.value
            if isinstance(v, bool):
                yield node, "const", v, not v
            elif isinstance(v, (int, float)):
                yield node, "const", v, v + 1


class _Replace(ast.NodeTransformer):
    """Applies one site's change to a fresh parse of the module."""

    def __init__(self, target_index: int, sites_of):
        self.target_index = target_index
        self.sites_of = sites_of
        self.changed = ""

    def apply(self, tree: ast.AST) -> ast.AST:
        for i, (node, kind, old, new) in enumerate(self.sites_of(tree)):
            if i != self.target_index:
                continue
            before = ast.unparse(node)
            if kind == "op":
                node.op = new()
            elif kind.startswith("cmp"):
                node.ops[int(kind[3:])] = new()
            elif kind == "boolop":
                node.op = new()
            elif kind == "const":
                node.value = new
            elif kind == "drop-unary":
                return self._drop_unary(tree, node, before)
            self.changed = f"{before} -> {ast.unparse(node)}"
            return tree
        raise IndexError(self.target_index)

    def _drop_unary(self, tree, target, before):
        class Drop(ast.NodeTransformer):
            def visit_UnaryOp(inner, node):  # noqa: N805
                if node is target:
                    return node.operand
                return inner.generic_visit(node)

        tree = Drop().visit(tree)
        self.changed = f"{before} -> {ast.unparse(target.operand)}"
        return tree


def mutants_of(path: Path) -> list[Mutant]:
    source = path.read_text()
    lines = source.splitlines()
    out = []
    for i, (node, kind, old, new) in enumerate(_sites(ast.parse(source))):
        tree = ast.parse(source)
        replacer = _Replace(i, _sites)
        replacer.apply(tree)
        line = node.lineno
        out.append(Mutant(str(path.relative_to(REPO)), line, lines[line - 1].strip(), replacer.changed, i))
    return out


def mutated_source(m: Mutant) -> str:
    source = (REPO / m.file).read_text()
    tree = _Replace(m.index, _sites).apply(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


# ---- running ---------------------------------------------------------------------------------------


def _shadow_tree() -> Path:
    """A private copy of roofline/ and tests/ (and what the tests read beside them)."""
    root = Path(tempfile.mkdtemp(prefix="roofline-mutants-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(REPO / "roofline", root / "roofline", ignore=ignore)
    shutil.copytree(REPO / "tests", root / "tests", ignore=ignore)
    shutil.copy2(REPO / "pyproject.toml", root / "pyproject.toml")
    for name in ("device_profiles", "examples", "calibrate", "benchmarks"):
        if (REPO / name).exists():
            (root / name).symlink_to(REPO / name)  # read by some tests; never written
    return root


class _TheMutatedFileFirst:
    """A pytest plugin: the worked examples of the ops the mutated file prices run first."""

    def __init__(self, packets: set[str]):
        self.packets = packets

    def pytest_collection_modifyitems(self, session, config, items):
        def rank(item) -> int:
            key = getattr(item, "callspec", None) and item.callspec.params.get("key")
            if not key:
                return 1
            return 0 if key.split("[")[0] in self.packets else 2

        items.sort(key=rank)

    def pytest_sessionfinish(self, session, exitstatus):
        """Leave at once: pytest's teardown takes longer than a killed mutant's tests."""
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(int(exitstatus))


def formula_files() -> dict[str, str]:
    """Each registered op's formula file (roofline/costs/X.py), read from the unmutated tree in a subprocess."""
    import json
    import subprocess

    code = ("import json, sys; from roofline.costs import registry as r; "
            "print(json.dumps({k: sys.modules[f.__wrapped__.__module__].__file__ for k, f in r._FORMULAS.items()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return {k: str(Path(v).resolve().relative_to(REPO)) for k, v in json.loads(out.stdout).items()}


class _Refuse:
    """A meta path finder that refuses to import one package (so that preloading leaves it out)."""

    def __init__(self, name: str):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name or fullname.startswith(self.name + "."):
            raise ImportError(f"{fullname} is not preloaded")
        return None


def preload(root: Path, package: str) -> int:
    """Import, from the copy at ``root``, every roofline module that does not import ``roofline.<package>``.

    Each forked run then starts with them loaded (their copies are identical in every worker's tree,
    and never mutated), and imports only the mutated package and what depends on it. Returns how many.
    """
    import importlib

    sys.path.insert(0, str(root))
    blocked = f"roofline.{package}"
    refuse = _Refuse(blocked)
    sys.meta_path.insert(0, refuse)
    try:
        for path in sorted((root / "roofline").rglob("*.py")):
            name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            if name == blocked or name.startswith(blocked + ".") or name.endswith("__main__"):
                continue
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001  (it needs the mutated package, or cannot load alone: left to each run)
                pass
    finally:
        sys.meta_path.remove(refuse)
        sys.path.remove(str(root))
    assert not any(m == blocked or m.startswith(blocked + ".") for m in sys.modules)
    return sum(m.startswith("roofline") for m in sys.modules)


# A child's exit codes of its own (pytest's are 0-5). HARNESS_FAILED and NOT_THE_COPY are the run's own
# failures, which no mutant can cause: the run stops. MUTANT_CRASHED is a mutant that breaks the import of
# the mutated package (or makes pytest itself raise) before any test could fail: the tests notice it, so
# it is killed, as a mutant that breaks collection (pytest's exit 2) is.
MUTANT_CRASHED, HARNESS_FAILED, NOT_THE_COPY = 97, 98, 99

# Every forked child not yet reaped, so that the cleanup can stop and reap whatever is left.
_children: set[int] = set()


def _start(root: Path, tests: list[str], log: Path, package: str, first: set[str] = frozenset()) -> int:
    """Fork a child that runs ``tests`` inside ``root`` (the examples of the ops in ``first`` first); returns its pid."""
    pid = os.fork()
    if pid:
        _children.add(pid)
        return pid
    stage = "harness"
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.chdir(root)
        sys.path.insert(0, str(root))
        import glob
        import importlib
        import traceback

        import pytest

        import roofline

        roofline.__path__[:] = [str(root / "roofline")]  # the mutated package comes from this worker's copy
        files = [f for pattern in tests for f in sorted(glob.glob(pattern))]
        stage = "mutant"  # from here on, what goes wrong goes wrong because of the copy's code
        try:
            mutated = importlib.import_module(f"roofline.{package}")
        except BaseException:  # noqa: BLE001  (a mutant may raise anything at import)
            print(f"importing roofline.{package} failed:", flush=True)
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(MUTANT_CRASHED)
        if not mutated.__file__.startswith(str(root)):
            print(f"roofline.{package} was imported from {mutated.__file__}, not the copy", flush=True)
            os._exit(NOT_THE_COPY)
        code = pytest.main(["-x", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--assert=plain", *files],
                           plugins=[_TheMutatedFileFirst(set(first))])
        sys.stdout.flush()
        os._exit(int(code))
    except BaseException as e:  # noqa: BLE001  (the child must never return into the parent's code)
        print(f"child failed ({stage}): {e!r}", flush=True)
        os._exit(MUTANT_CRASHED if stage == "mutant" else HARNESS_FAILED)


def _reap(pid: int, block: bool = True) -> int | None:
    """The child's exit code once it has ended (None while it runs, with ``block`` false); forgets it."""
    try:
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # reaped already
        _children.discard(pid)
        return -1
    if not done:
        return None
    _children.discard(pid)
    return os.waitstatus_to_exitcode(status)


def _kill(pid: int) -> None:
    """Stop a child and reap it; one that has ended already (or was reaped) is no error."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(pid)


def _wait(pid: int, deadline: float) -> tuple[int | None, bool]:
    """(exit code, timed out) of a child, killing it past ``deadline``."""
    while True:
        code = _reap(pid, block=False)
        if code is not None:
            return code, False
        if time.monotonic() > deadline:
            _kill(pid)
            return None, True
        time.sleep(0.05)


@dataclass
class Outcome:
    mutant: Mutant
    killed: bool
    how: str  # "tests failed", "import failed" (the mutated package does not import), "time-out", "survived"
    seconds: float


def run(mutants: list[Mutant], package: str, jobs: int, timeout_s: float, progress: bool) -> list[Outcome]:
    tests = TESTS[package]
    packets_of: dict[str, set[str]] = {}
    if package == "costs":
        for packet, file in formula_files().items():
            packets_of.setdefault(file, set()).add(packet)

    def quick(m: Mutant) -> list[str]:
        stem = Path(m.file).stem
        return [t.format(stem=stem) for t in QUICK[package] if (REPO / t.format(stem=stem)).exists()]

    roots = [_shadow_tree() for _ in range(jobs)]
    logs = [root / "run.log" for root in roots]
    try:
        preloaded = preload(roots[0], package)
        # The unmutated copy must pass, and must be the roofline the tests import.
        t0 = time.monotonic()
        code, timed_out = _wait(_start(roots[0], tests, logs[0], package), time.monotonic() + 900)
        baseline_s = time.monotonic() - t0
        if code != 0:
            sys.exit(f"the tests fail without any mutant (exit {code}); see {logs[0]}:\n" + logs[0].read_text()[-3000:])
        timeout_s = timeout_s or max(60.0, 4 * baseline_s)
        print(f"baseline: {' '.join(tests)} pass in {baseline_s:.1f} s ({preloaded} roofline modules preloaded); "
              f"a mutant's run is stopped after {timeout_s:.0f} s", flush=True)

        outcomes: list[Outcome] = []
        queue = list(mutants)
        running: dict[int, tuple[int, Mutant, float, bool]] = {}  # worker -> (pid, mutant, start, quick stage)
        free = list(range(jobs))
        while queue or running:
            while queue and free:
                w = free.pop()
                m = queue.pop(0)
                target = roots[w] / m.file
                target.write_text(mutated_source(m))
                stage = quick(m)
                running[w] = (_start(roots[w], stage or tests, logs[w], package, packets_of.get(m.file, set())), m, time.monotonic(), bool(stage))
            for w, (pid, m, start, quick_stage) in list(running.items()):
                code = _reap(pid, block=False)
                now = time.monotonic()
                if code is None and now - start < timeout_s:
                    continue
                if code is None:
                    _kill(pid)
                    outcome = Outcome(m, True, "time-out", now - start)
                else:
                    if code in (HARNESS_FAILED, NOT_THE_COPY):
                        sys.exit(f"the test run itself failed for {m.where} (exit {code}): see {logs[w]}:\n"
                                 + logs[w].read_text()[-3000:])
                    if code == 0 and quick_stage:  # survived the quick tests: now all of them
                        running[w] = (_start(roots[w], tests, logs[w], package, packets_of.get(m.file, set())), m, now, False)
                        continue
                    how = {0: "survived", MUTANT_CRASHED: "import failed"}.get(code, "tests failed")
                    outcome = Outcome(m, code != 0, how, now - start)
                shutil.copy2(REPO / m.file, roots[w] / m.file)  # the copy's original back
                outcomes.append(outcome)
                del running[w]
                free.append(w)
                if progress:
                    mark = "." if outcome.killed else "S"
                    print(mark, end="" if len(outcomes) % 100 else f" {len(outcomes)}/{len(mutants)}\n", flush=True)
            time.sleep(0.02)
        if progress:
            print(flush=True)
        return outcomes
    finally:
        for pid in list(_children):  # the runs in flight (and a baseline interrupted): stopped and reaped
            _kill(pid)
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


def report(package: str, outcomes: list[Outcome]) -> float:
    by_file: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_file.setdefault(o.mutant.file, []).append(o)
    print(f"\nmutation score of roofline/{package} (killed / mutants, equivalent mutants left out)")
    print(f"{'file':<36} {'mutants':>8} {'killed':>7} {'survived':>9} {'equivalent':>11} {'score':>7}")
    total_killed = total_counted = total_equivalent = 0
    survivors = []
    for file, group in sorted(by_file.items()):
        equivalent = [o for o in group if o.mutant.equivalent]
        counted = [o for o in group if not o.mutant.equivalent]
        killed = sum(o.killed for o in counted)
        survivors += [o for o in counted if not o.killed]
        total_killed += killed
        total_counted += len(counted)
        total_equivalent += len(equivalent)
        score = killed / len(counted) if counted else 1.0
        print(f"{file:<36} {len(group):>8} {killed:>7} {len(counted) - killed:>9} {len(equivalent):>11} {score:>7.1%}")
    score = total_killed / total_counted if total_counted else 1.0
    print(f"{'total':<36} {total_counted + total_equivalent:>8} {total_killed:>7} {total_counted - total_killed:>9} "
          f"{total_equivalent:>11} {score:>7.1%}")
    timeouts = sum(o.how == "time-out" for o in outcomes)
    if timeouts:
        print(f"({timeouts} of the killed mutants were stopped at the time limit)")
    broken = sum(o.how == "import failed" for o in outcomes)
    if broken:
        print(f"({broken} of the killed mutants make the mutated package fail to import)")
    if survivors:
        print("\nsurviving mutants:")
        for o in sorted(survivors, key=lambda o: (o.mutant.file, o.mutant.line)):
            print(f"  {o.mutant.where}: {o.mutant.change}    [{o.mutant.source_line}]")
    names = {f.name for f in _files(package, None)}
    unused = [e for e in EQUIVALENT if (e.file == "*" or e.file in names) and not any(e.matches(o.mutant) for o in outcomes)]
    if unused and len(by_file) == len([f for f in _files(package, None) if mutants_of(f)]):
        print(f"\n{len(unused)} entries of EQUIVALENT match no mutant any more: {unused}")
    killed_equivalent = [o for o in outcomes if o.mutant.equivalent and o.killed]
    if killed_equivalent:  # an entry that is not equivalent after all
        print("\nmutants listed as equivalent that the tests kill:")
        for o in killed_equivalent:
            print(f"  {o.mutant.where}: {o.mutant.change}")
    return score


def _files(package: str, names: list[str] | None) -> list[Path]:
    folder = REPO / "roofline" / package
    files = sorted(p for p in folder.glob("*.py"))
    if names:
        files = [folder / n for n in names]
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            sys.exit(f"no such file: {', '.join(missing)}")
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", choices=sorted(TESTS), default="costs")
    parser.add_argument("--files", nargs="+", help="file names inside the package (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    parser.add_argument("--timeout", type=float, default=0.0, help="seconds per mutant's test run (default: 4x the unmutated run, at least 60)")
    parser.add_argument("--count", action="store_true", help="list how many mutants each file has, and run nothing")
    parser.add_argument("--quiet", action="store_true", help="no progress dots")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")

    mutants = [m for f in _files(args.package, args.files) for m in mutants_of(f)]
    if args.count:
        for f in _files(args.package, args.files):
            print(f"{f.relative_to(REPO)}: {sum(m.file == str(f.relative_to(REPO)) for m in mutants)}")
        print(f"total: {len(mutants)}")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped"))  # so that the copies are removed
    sys.dont_write_bytecode = True  # the copies are rewritten within a second: no stale .pyc may be reused
    # Imported once here, so that each forked run starts with them loaded (roofline is not: each run
    # imports its mutated copy).
    import matplotlib  # noqa: F401
    import numpy  # noqa: F401
    import pydantic  # noqa: F401
    import pytest  # noqa: F401
    import scipy  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401  (the first op of a run would import it)
    import torch.utils.flop_counter  # noqa: F401

    assert "roofline" not in sys.modules
    torch.set_num_threads(1)  # tiny tensors; the runs in parallel share the cores

    t0 = time.monotonic()
    outcomes = run(mutants, args.package, args.jobs, args.timeout, progress=not args.quiet)
    score = report(args.package, outcomes)
    print(f"\n{len(outcomes)} mutants in {time.monotonic() - t0:.0f} s with {args.jobs} jobs")
    return 0 if score >= 0.9 or args.package != "costs" else 1


if __name__ == "__main__":
    sys.exit(main())
