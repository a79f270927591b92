"""A report as Jupyter shows it (``Report._repr_html_``): the headline, the plan, the slowest ops and
the roofline chart inline, in one small HTML fragment."""

from __future__ import annotations

import html

from roofline.advice.plans import plan_label
from roofline.schema.report import Report
from roofline.units import count, seconds

TOP_OPS = 10


def _profile_of(report: Report):
    """The profile the report was made with, found by its file or name; None if it is not here."""
    from roofline.errors import RooflineError
    from roofline.profiles import find_profile

    for key in (report.profile.source, report.profile.name):
        if key:
            try:
                return find_profile(key)
            except (RooflineError, OSError):
                continue
    return None


def _chart(report: Report) -> str:
    profile = _profile_of(report)
    if profile is None:
        return f"<p><i>roofline chart: profile '{html.escape(report.profile.name)}' is not on this machine</i></p>"
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from roofline.report.charts import make_chart
    from roofline.report.html import _png_data_uri

    fig = make_chart("roofline", report, profile)
    try:
        return f'<img alt="roofline chart" style="max-width:720px" src="{_png_data_uri(fig)}"/>'
    finally:
        plt.close(fig)


def notebook_html(report: Report) -> str:
    """The headline, the recommended plan, the top ops as a table, and the roofline chart."""
    t = report.total
    rec = report.recommended_plan
    head = (
        f"<b>{html.escape(report.model)}</b> on <b>{html.escape(report.profile.device)}</b> "
        f"(profile '{html.escape(report.profile.name)}'): predicted {seconds(t.predicted_s)} eager, "
        f"{count(t.flops, 'FLOP')}, {count(t.bytes, 'B')}, {t.ops} ops"
    )
    plan = f"<br/>plan: <b>{html.escape(plan_label(rec))}</b>, {seconds(rec.predicted_s)} per call — {html.escape(rec.reason)}" if rec else ""
    uncertain = (
        f"<br/><span style='color:#a60'>uncertain: {100 * report.uncertain.share:.0f}% of the predicted time is in "
        f"{report.uncertain.ops} ops the profile does not cover</span>" if report.uncertain.ops else ""
    )
    rows = "".join(
        f"<tr><td>{op.index}</td><td>{html.escape(op.target)}</td><td>{html.escape(op.module)}</td>"
        f"<td style='text-align:right'>{seconds(op.predicted_s)}</td><td>{op.regime}</td></tr>"
        for op in sorted(report.ops, key=lambda o: -o.predicted_s)[:TOP_OPS]
    )
    table = (
        "<table><thead><tr><th>#</th><th>op</th><th>module</th><th>predicted</th><th>regime</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return f"<div class='roofline-report'><p>{head}{plan}{uncertain}</p>{table}{_chart(report)}</div>"
