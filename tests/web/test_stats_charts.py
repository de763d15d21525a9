"""The statistics on the gradebook page as server-drawn SVG: a score histogram and per-check pass rates, each an
image with a title and a description that says its numbers, beside a table of the same numbers."""

from __future__ import annotations

import re

from app.gradebook.stats import histogram
from app.web.charts import histogram_chart


def test_gradebook_draws_histogram_and_pass_rates(accounts, as_instructor):  # type: ignore[no-untyped-def]
    client, _ = as_instructor
    for key, b1 in (("alice", "Encoder"), ("bob", "Decoder")):
        body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": b1, "b2": "32"}}
        client.post("/api/v1/submissions", json=body, headers=accounts[key].headers, params={"wait": 10})
    essay = {"problem_set": "basic", "problem": "t3", "answers": {"b1": "We held the split equal."}}
    client.post("/api/v1/submissions", json=essay, headers=accounts["alice"].headers, params={"wait": 10})

    html = client.get("/instructor/sets/basic/gradebook").text
    assert "<script" not in html.split("Per-question statistics")[1]  # drawn on the server, no chart library
    svg = re.search(
        r'<svg class="chart" role="img"[^>]*aria-labelledby="(hist-1)-title hist-1-desc".*?</svg>', html, re.S
    )
    assert svg, "no histogram for t1"
    assert '<title id="hist-1-title">Score histogram of t1</title>' in svg.group(0)
    # t1 is worth 3: alice has full marks, bob lost the 1-point blank.
    assert "Counted scores of 2 students by score: 0–1: 0, 1–2: 0, 2–3: 1, 3: 1." in svg.group(0)
    heights = [
        float(h)
        for h in re.findall(r'<rect class="chart-bar" x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)"', svg.group(0))
    ]
    assert heights[:2] == [0.0, 0.0] and heights[2] == heights[3] > 0  # as tall as their counts
    assert '<tr><td>2–3</td><td class="num">1</td></tr>' in html  # the table fallback

    rates = re.search(
        r'<svg class="chart" role="img"[^>]*aria-labelledby="pass-1-title pass-1-desc".*?</svg>', html, re.S
    )
    assert rates, "no pass-rate chart for t1"
    assert re.search(
        r"Share of graded attempts passing each check: b1 50% \(1 of 2\), b2 100% \(2 of 2\)\.", rates.group(0)
    )

    stats = client.get("/api/v1/gradebook/basic/stats", headers=accounts["instructor"].headers).json()
    t1 = next(p for p in stats["problems"] if p["id"] == "t1")
    assert [b["students"] for b in t1["histogram"]] == [0, 0, 1, 1]
    # An essay awaiting hand grading is pending, not a 0 in the histogram.
    t3 = next(p for p in stats["problems"] if p["id"] == "t3")
    assert t3["pending_manual"] == 1 and sum(b["students"] for b in t3["histogram"]) == 0
    assert "1 awaiting hand grading, left out of the histogram" in html and "Score histogram of t3" not in html


def test_chart_descriptions_say_every_number() -> None:
    bins = histogram([0.0, 2.0, 2.0], 2)
    assert histogram_chart(bins, pending=1).description == (
        "Counted scores of 3 students by score: 0–1: 1, 1–2: 0, 2: 2. 1 more awaits hand grading."
    )
    tall = [bar.height for bar in histogram_chart(bins).bars]
    assert tall[1] == 0 and tall[2] == 2 * tall[0] > 0
