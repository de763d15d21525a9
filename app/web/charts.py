"""Charts drawn on the server as SVG geometry (no chart library, no script): the template only places shapes.

Each chart also carries a one-sentence description for its <desc> (in the viewer's language: ``tr``), and the page
keeps a table of the same numbers.
"""

from __future__ import annotations

import gettext
from dataclasses import dataclass

from app.gradebook.schemas import CheckStat, ProblemStats, ScoreBin

WIDTH = 320
PLOT_TOP, PLOT_BOTTOM = 16, 132  # histogram: bar area, then the axis labels below it
HEIGHT = 156
ROW = 22  # pass-rate chart: one row per check
LABEL_W = 110  # the check names, left of the bars


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str  # under (histogram) or beside (pass rates) the bar
    value: str  # above or after the bar


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    bars: list[Bar]
    description: str
    baseline: float = PLOT_BOTTOM


def _num(value: float) -> str:
    return f"{value:g}"


def bin_label(b: ScoreBin) -> str:
    return _num(b.low) if b.low == b.high else f"{_num(b.low)}–{_num(b.high)}"


_ENGLISH = gettext.NullTranslations()


def histogram_chart(bins: list[ScoreBin], pending: int = 0, tr: gettext.NullTranslations = _ENGLISH) -> Chart:
    """Vertical bars, one per score bin, as tall as its share of the fullest bin."""
    tallest = max((b.students for b in bins), default=0) or 1
    slot = (WIDTH - 8) / max(len(bins), 1)
    bars = []
    for i, b in enumerate(bins):
        height = (PLOT_BOTTOM - PLOT_TOP) * b.students / tallest
        bars.append(
            Bar(
                x=round(4 + i * slot + slot * 0.1, 2),
                y=round(PLOT_BOTTOM - height, 2),
                width=round(slot * 0.8, 2),
                height=round(height, 2),
                label=bin_label(b),
                value=str(b.students),
            )
        )
    total = sum(b.students for b in bins)
    parts = ", ".join(f"{bin_label(b)}: {b.students}" for b in bins)
    text = tr.ngettext(
        "Counted scores of %(num)d student by score: %(parts)s.",
        "Counted scores of %(num)d students by score: %(parts)s.",
        total,
    ) % {"num": total, "parts": parts}
    if pending:
        text += " " + tr.ngettext("%(num)d more awaits hand grading.", "%(num)d more await hand grading.", pending) % {
            "num": pending
        }
    return Chart(WIDTH, HEIGHT, bars, text)


def pass_rate_chart(checks: list[CheckStat], tr: gettext.NullTranslations = _ENGLISH) -> Chart:
    """Horizontal bars, one per check, as long as its pass rate (0 to 100%)."""
    span = WIDTH - LABEL_W - 44
    bars = [
        Bar(
            x=LABEL_W,
            y=4 + i * ROW,
            width=round(span * c.pass_rate, 2),
            height=ROW - 8,
            label=c.name if len(c.name) <= 16 else c.name[:15] + "…",
            value=f"{round(100 * c.pass_rate)}%",
        )
        for i, c in enumerate(checks)
    ]
    of = tr.gettext("%(rate)d%% (%(passed)d of %(results)d)")
    parts = ", ".join(
        f"{c.name} " + of % {"rate": round(100 * c.pass_rate), "passed": c.passed, "results": c.results} for c in checks
    )
    text = tr.gettext("Share of graded attempts passing each check: %(parts)s.") % {"parts": parts}
    return Chart(WIDTH, 8 + ROW * len(checks), bars, text)


@dataclass(frozen=True)
class ProblemCharts:
    histogram: Chart
    pass_rates: Chart

    @classmethod
    def of(cls, stats: ProblemStats, tr: gettext.NullTranslations = _ENGLISH) -> ProblemCharts:
        return cls(histogram_chart(stats.histogram, stats.pending_manual, tr), pass_rate_chart(stats.checks, tr))
