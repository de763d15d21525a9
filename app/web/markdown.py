"""Markdown to HTML on the server, with $...$ / $$...$$ math left intact for KaTeX to render in the browser.

Math is cut out before Markdown sees it (otherwise ``a_1 * b_2`` turns into emphasis and ``\\\\`` loses a backslash),
then put back, HTML-escaped, as the text KaTeX's auto-render looks for. Runs of underscores (fill-in blanks
such as ``（b1）______``) are protected the same way: two blanks on a line would otherwise become bold text.
Raw HTML in the source is shown as text, never passed through.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markupsafe import Markup

from graders.input_limits import MAX_MARKDOWN_NESTING

# No DOTALL and no nested "anything" repeats: each alternative scans forward once, so a long prompt with an
# unclosed fence or a stray $ costs linear time, not exponential backtracking.
_PROTECTED = re.compile(
    r"""
      (?P<fence>^[ ]{0,3}(?P<mark>`{3,}|~{3,})[^\n]*\n(?:[^\n]*\n)*?[ ]{0,3}(?P=mark)[ \t]*$)  # fenced code: untouched
    | (?P<code>(?P<ticks>`+)[^`][\s\S]*?(?P=ticks))                                    # inline code: untouched
    | (?P<display>\$\$[\s\S]+?\$\$)                                                    # display math
    | (?P<inline>(?<![\\$])\$(?![\s$])(?:\\.|[^$\\\n])*?(?<![\s\\])\$(?!\d))           # inline math
    | (?P<blank>_{3,})                                                                # fill-in blank
    """,
    re.MULTILINE | re.VERBOSE,
)
# Private-use characters: never in prompts, and Markdown leaves them alone.
_OPEN, _CLOSE = "\ue000", "\ue001"
_PLACEHOLDER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    options = {"html": False, "linkify": False, "typographer": False, "maxNesting": MAX_MARKDOWN_NESTING}
    return MarkdownIt("commonmark", options).enable("table")


def render_markdown(source: str, *, inline: bool = False) -> Markup:
    """Render instructor Markdown with math to safe HTML (math stays as $...$ text for KaTeX).

    ``inline`` renders one line without a paragraph around it (choice options, titles).
    """
    kept: list[str] = []

    def protect(match: re.Match[str]) -> str:
        if match.group("fence") or match.group("code"):
            return match.group(0)
        kept.append(match.group(0))
        return f"{_OPEN}{len(kept) - 1}{_CLOSE}"

    # Stray private-use markers in the source could forge a placeholder; drop them (they never render anyway).
    clean = source.replace(_OPEN, "").replace(_CLOSE, "")
    protected = _PROTECTED.sub(protect, clean)
    rendered = _parser().renderInline(protected) if inline else _parser().render(protected)
    # Safe to mark: markdown-it escapes all text (html is off), and the math put back is escaped here.
    out = _PLACEHOLDER.sub(lambda m: html.escape(kept[int(m.group(1))], quote=False), rendered)
    return Markup(out)  # noqa: S704


def render_inline(source: str) -> Markup:
    return render_markdown(source, inline=True)
