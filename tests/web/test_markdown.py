"""Prompt rendering: Markdown on the server, math and fill-in blanks left intact for KaTeX, raw HTML never passed."""

from __future__ import annotations

import time

from app.web.markdown import render_inline, render_markdown


def test_math_survives_markdown() -> None:
    html = render_markdown(r"Use $a_1 * b_2 * c_3$ and $$\begin{pmatrix} a & b \\ c < d \end{pmatrix}$$")
    assert "$a_1 * b_2 * c_3$" in html  # no <em> from the underscores or stars
    assert r"$$\begin{pmatrix} a &amp; b \\ c &lt; d \end{pmatrix}$$" in html  # \\ kept, HTML escaped


def test_blanks_are_not_emphasis_and_chinese_is_kept() -> None:
    html = render_markdown("query 表示当前想要（b3）______，key 用于和 query 进行（b4）______，")
    assert "<strong>" not in html and "<em>" not in html
    assert "（b3）______，key" in html


def test_raw_html_and_script_links_are_inert() -> None:
    html = render_markdown('<script>alert(1)</script> [x](javascript:alert(1)) <img src=x onerror="y">')
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html
    assert "<img" not in html


def test_code_is_left_alone() -> None:
    html = render_markdown("```python\nreturn $x$ * y_1_\n```\nthen `$y$`")
    assert "return $x$ * y_1_" in html and "<code>$y$</code>" in html


def test_inline_has_no_paragraph() -> None:
    assert render_inline("**B** $x^2$") == "<strong>B</strong> $x^2$"


def test_forged_placeholders_are_dropped() -> None:
    assert "\ue000" not in render_markdown("a \ue0000\ue001 $x$")


def test_pathological_prompts_render_in_linear_time() -> None:
    # A fenced block followed by a long body once took seconds (catastrophic backtracking in the protecting regex).
    start = time.perf_counter()
    render_markdown("```python\ndef f(q, k):\n    return q\n```\n" + "text $x_1$ and `code`\n" * 400)
    render_markdown("```\n" + "unclosed fence $a$ ` y\n" * 2000)
    render_markdown("$" + "a " * 5000 + "\n`" * 1000)
    assert time.perf_counter() - start < 1.0
