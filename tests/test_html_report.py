"""The design-review page (roofline.report.html): self-contained, complete, escaped, and clean in a browser."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

from roofline.pipeline import analyze
from roofline.errors import RooflineError
from roofline.report.html import TOP_OPS, write_html
from roofline.profiles import load_profile_file
from roofline.schema.report import BatchPoint, BatchSweep

FIXTURE = Path(__file__).parent / "fixtures" / "h100_profile.json"


class Deep(nn.Module):
    """40 Linear + ReLU pairs (more ops than the table shows) and a pointwise tail (a fusion group)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(*[m for _ in range(40) for m in (nn.Linear(32, 32), nn.ReLU())])

    def forward(self, x):
        y = self.layers(x)
        return torch.sigmoid(y * 2.0 + 1.0).sum(-1)


@pytest.fixture(scope="module")
def profile():
    return load_profile_file(FIXTURE)


@pytest.fixture(scope="module")
def report(profile):
    r = analyze(Deep().eval(), (torch.randn(4, 32),), profile=profile, name="deep<mlp>&co", batch_sweep=False)
    r.batch_sweep = BatchSweep(
        device="cuda",
        points=[BatchPoint(batch=b, predicted_s=1e-4 * (1 + b / 64), per_sample_s=1e-4 * (1 + b / 64) / b, regime="overhead" if b < 64 else "compute") for b in (1, 4, 16, 64, 256)],
        leaves_overhead_at=64, compute_bound_at=64, doubling_ratio=1.02,
    )
    r.advice.append("try <b>bold</b> & see")
    return r


@pytest.fixture(scope="module")
def measured_report(report):
    r = report.model_copy(deep=True)
    for k, op in enumerate(r.ops):
        if op.kernels:
            op.measured_s = op.kernel_s * (40 if k == 1 else 1.2)  # one op >= 20 us, off by a known factor
            op.error = (op.kernel_s - op.measured_s) / op.measured_s
    r.total.measured_s = r.total.predicted_s / 1.25
    return r


def _check_self_contained(page: str) -> None:
    low = page.lower()
    assert "http://" not in low and "https://" not in low
    assert 'src="/' not in low and "src='/" not in low
    assert "<script" not in low and "<link" not in low and "@import" not in low and "url(" not in low
    srcs = re.findall(r'src="([^"]*)"', page)
    assert srcs, "no images"
    assert all(s.startswith("data:image/png;base64,") for s in srcs), [s[:40] for s in srcs]


@pytest.fixture(scope="module")
def page(report, profile, tmp_path_factory):
    path = write_html(report, profile, tmp_path_factory.mktemp("html") / "review.html")
    return path.read_text(encoding="utf-8")


def test_page_is_self_contained_and_complete(page, report, profile):
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    _check_self_contained(page)
    assert "<style>" in page
    for section in ('id="summary"', 'id="advice"', 'id="charts"', 'id="profile"', 'id="placement"', 'id="batch"', 'id="ops"', 'id="modules"', 'id="fusion"'):
        assert section in page, section
    assert 'id="accuracy"' not in page  # not measured
    # Profile summary: the device and its key ceilings.
    assert profile.gpu.identity.name in page
    assert "matmul peak, bfloat16" in page and "DRAM bandwidth, copy" in page and "host dispatch per op" in page
    # Charts: roofline, modules, batch; no measured chart without measurements.
    assert 'id="fig-roofline"' in page and 'id="fig-modules"' in page and 'id="fig-batch"' in page
    assert 'id="fig-vs_measured"' not in page
    # The op table holds the top 50 ops (of more), without measured columns.
    ops_table = page.split('id="ops"')[1].split("</table>")[0]
    assert len(report.ops) > TOP_OPS
    assert ops_table.count("<tr>") + ops_table.count('<tr class=') == TOP_OPS + 1
    assert f"{len(report.ops) - TOP_OPS} more in the JSON report" in page
    assert ">error<" not in ops_table
    # Regime shares and advice.
    assert "overhead" in page.split('id="summary"')[1].split("<h2")[0]
    assert report.advice[0].split(" — ")[0] in page


def test_user_text_is_escaped(page):
    assert "deep&lt;mlp&gt;&amp;co" in page and "deep<mlp>" not in page
    assert "try &lt;b&gt;bold&lt;/b&gt; &amp; see" in page


def test_measured_page_has_accuracy(measured_report, profile, tmp_path):
    page = write_html(measured_report, profile, tmp_path / "m.html").read_text(encoding="utf-8")
    _check_self_contained(page)
    assert 'id="accuracy"' in page and 'id="fig-vs_measured"' in page
    acc = page.split('id="accuracy"')[1].split("<h2")[0]
    assert "median |error|" in acc and "max |error|" in acc
    assert ">98%<" in acc  # the one op >= 20 us: predicted 1/40 of measured
    assert "+25%" in acc  # whole forward: predicted 1.25x measured
    ops_table = page.split('id="ops"')[1].split("</table>")[0]
    assert ">measured<" in ops_table and ">error<" in ops_table


def test_prediction_at_the_host_speed_reaches_the_page(measured_report, profile, tmp_path):
    # --measure's second prediction (host costs times the index's scale) shows beside the measured time
    r = measured_report.model_copy(deep=True)
    r.total.host_scale = 0.8
    r.total.predicted_at_host_now_s = r.total.measured_s * 1.05
    page = write_html(r, profile, tmp_path / "h.html").read_text(encoding="utf-8")
    summary = page.split("at the host")[1].split("</div>")[0:3]
    assert "(x0.80)" in summary[0] and "+5%" in " ".join(summary)
    assert "at the host" not in write_html(measured_report, profile, tmp_path / "m.html").read_text(encoding="utf-8")


def test_measured_alternatives_reach_the_page(measured_report, profile, tmp_path):
    # the measured CUDA-graph time, as attach_alternatives stores it, shows beside the predicted one
    from roofline.checks import attach_alternatives
    from roofline.units import seconds

    r = measured_report.model_copy(deep=True)
    predicted = r.alternatives.cuda_graphs_s
    attach_alternatives(r, {"cuda_graphs": 1.234e-4}, [], {"cuda_graphs": 5.0e-4})
    page = write_html(r, profile, tmp_path / "alt.html").read_text(encoding="utf-8")
    alt = page.split("Execution alternatives")[1].split("</table>")[0]
    row = alt.split("cuda graphs")[1].split("</tr>")[0]
    assert seconds(predicted, missing="–") in row and seconds(1.234e-4, missing="–") in row and seconds(5.0e-4, missing="–") in row
    gain = r.gain_checks[0]
    assert gain.measured_eager_s == 5.0e-4 and gain.measured_gain_s == pytest.approx(5.0e-4 - 1.234e-4)


def test_write_errors(report, profile, tmp_path):
    with pytest.raises(RooflineError, match=r"\.html"):
        write_html(report, profile, tmp_path / "r.txt")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RooflineError, match="cannot write"):
        write_html(report, profile, blocker / "r.html")
    (tmp_path / "d.html").mkdir()
    with pytest.raises(RooflineError, match="directory"):
        write_html(report, profile, tmp_path / "d.html")


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def _open_in_chromium(browser: str, page: Path, profile_dir: Path) -> tuple[str, str]:
    cmd = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-extensions", f"--user-data-dir={profile_dir}",
        "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",  # no network at all
        "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, proc.stderr


def _console_problems(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "Uncaught" in ln or ":CONSOLE" in ln or "ERROR:CONSOLE" in ln]


def test_page_opens_in_headless_chromium_without_errors(measured_report, profile, tmp_path):
    browser = _chromium()
    if browser is None:
        # CI installs it (.ci/run), so there the page is always opened; elsewhere say how to get it
        if os.environ.get("CI"):
            pytest.fail("no chromium on this CI machine: .ci/run should have installed it (apt-get install chromium)")
        pytest.skip("no chromium on this machine: apt-get install chromium")
    page = write_html(measured_report, profile, tmp_path / "review.html")
    dom, stderr = _open_in_chromium(browser, page, tmp_path / "chrome-profile")
    assert "roofline review" in dom and "<img" in dom
    assert _console_problems(stderr) == [], _console_problems(stderr)
    # The scan is not vacuous: a page with a script error is caught.
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>no_such_function();</script></body></html>")
    _, stderr = _open_in_chromium(browser, bad, tmp_path / "chrome-profile-2")
    assert _console_problems(stderr), "the console scan did not catch a deliberate script error"
