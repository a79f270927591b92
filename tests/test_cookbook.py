"""docs/cookbook.md stays true: every ```console block whose first line is `$ roofline ...` is run in-process with
the same arguments, and the lines the page quotes from its output as answers (KEY_PREFIXES: the headline, `plan:`,
`predicted alternatives:`, the runners-up, the padding, placement, copies and training lines) must come out the
same. A change of the model of time that moves a quoted figure fails here; refresh the page with the command's new
output."""

import re
import shlex

import pytest

from roofline.cli import main
from tests.conftest import REPO

COOKBOOK = REPO / "docs" / "cookbook.md"

# lines of the output the page quotes as answers; each is one whole printed line (a wrapped advice line's first part)
KEY_PREFIXES = (
    "predicted ",                 # the headline: eager time, FLOPs, bytes, host and device time
    "time by regime:",
    "plan:",
    "predicted alternatives:",
    "batch sweep ",
    "  - plan:",
    "  - runners-up:",
    "  - copies:",
    "  - pad ",
    "  - placement over ",
    "  - training step ",
    "  - memory over the step ",
    "  - optimizer:",
    "  - torch.compile on the model",
    "  - activation checkpointing",
    "  - batch size: ",
)


def cookbook_commands():
    """(argv, key lines) of each console block of the page that runs roofline."""
    blocks = re.findall(r"^```console\n(.*?)^```", COOKBOOK.read_text(encoding="utf-8"), flags=re.S | re.M)
    out = []
    for block in blocks:
        lines = block.splitlines()
        if not lines or not lines[0].startswith("$ roofline "):
            continue
        argv = shlex.split(lines[0][2:])[1:]
        name = " ".join(a for i, a in enumerate(argv) if a != "--profile" and (i == 0 or argv[i - 1] != "--profile"))
        keys = [line.rstrip() for line in lines[1:] if line.startswith(KEY_PREFIXES)]
        out.append(pytest.param(argv, keys, id=name))
    return out


COMMANDS = cookbook_commands()


def test_the_page_has_its_five_answers():
    assert len(COMMANDS) >= 5
    assert all(param.values[0][0] == "advise" for param in COMMANDS)


@pytest.mark.parametrize("argv,keys", COMMANDS)
def test_cookbook_output_is_current(argv, keys, capsys, monkeypatch):
    assert any(k.startswith("plan:") for k in keys), "each answer quotes its plan line"
    monkeypatch.chdir(REPO)
    assert main(argv) == 0
    printed = {line.rstrip() for line in capsys.readouterr().out.splitlines()}
    stale = [k for k in keys if k not in printed]
    assert not stale, "docs/cookbook.md quotes lines `roofline " + " ".join(argv) + "` no longer prints:\n" + "\n".join(stale)
