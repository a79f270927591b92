"""Every Python file of the project compiles under this interpreter (scripts that no test imports, too)."""

import py_compile
import subprocess

from tests.conftest import REPO


def test_all_tracked_python_files_compile(tmp_path):
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True).stdout.split()
    if not files:  # not a git checkout: walk the tree
        files = [str(p.relative_to(REPO)) for p in REPO.rglob("*.py") if ".git" not in p.parts]
    assert files
    for f in files:
        py_compile.compile(str(REPO / f), cfile=str(tmp_path / "x.pyc"), doraise=True)
