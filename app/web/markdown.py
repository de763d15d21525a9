"""Markdown to HTML on the server, with $...$ / $$...$$ math left intact for KaTeX to render in the browser.

Math is cut out before Markdown sees it (otherwise ``a_1 * b_2`` turns into emphasis and ``\\\\`` loses a backslash),
then put back, HTML-escaped, as the text KaTeX's auto-render looks for. Runs of underscores (fill-in blanks
such as ``（b1）______``) are protected the same way: two blanks on a line would otherwise become bold text.
Raw HTML in the source is shown as text, never passed through.

``render_prompt`` also puts each answer blank in its place: a ``（b1）______`` marker becomes that part's input, and
a marker inside a formula (``\\text{(b1)}``, which KaTeX must draw) gets its input right after the formula.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping
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
    | (?P<blank>(?:[（(][ \t]*(?P<bid>b\d{1,3})[ \t]*[）)][ \t]*)?_{3,})                  # fill-in blank
    """,
    re.MULTILINE | re.VERBOSE,
)
# Private-use characters: never in prompts, and Markdown leaves them alone.
_OPEN, _CLOSE = "\ue000", "\ue001"
_PLACEHOLDER = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
# A placeholder alone in its paragraph stands for a block (a code listing with blanks): no <p> around a <pre>.
_BLOCK_PLACEHOLDER = re.compile(f"<p>{_OPEN}(\\d+){_CLOSE}</p>")
_FENCE_MARKER = re.compile(r"[（(][ \t]*(b\d{1,3})[ \t]*[）)][ \t]*_{3,}")
# A blank's marker inside math: (b1) in \text{(b1)} or plain.
_MATH_MARKER = re.compile(r"\(\s*(b\d{1,3})\s*\)")


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    options = {"html": False, "linkify": False, "typographer": False, "maxNesting": MAX_MARKDOWN_NESTING}
    return MarkdownIt("commonmark", options).enable("table")


def render_markdown(source: str, *, inline: bool = False) -> Markup:
    """Render instructor Markdown with math to safe HTML (math stays as $...$ text for KaTeX).

    ``inline`` renders one line without a paragraph around it (choice options, titles).
    """
    return _render(source, inline=inline, blanks={}, placed=[])


def render_prompt(source: str, blanks: Mapping[str, Markup]) -> tuple[Markup, list[str]]:
    """A prompt with each part's input (``blanks``: part id -> its HTML) at the part's marker.

    Returns:
        The HTML and the part ids placed, in order; parts whose marker the prompt lacks go below it.
    """
    placed: list[str] = []
    return _render(source, inline=False, blanks=blanks, placed=placed), placed


def _render(source: str, *, inline: bool, blanks: Mapping[str, Markup], placed: list[str]) -> Markup:
    kept: list[str] = []  # HTML to put back: escaped math and blank text, or a blank's input

    def keep(html_text: str) -> str:
        kept.append(html_text)
        return f"{_OPEN}{len(kept) - 1}{_CLOSE}"

    def place(part_id: str) -> str:
        placed.append(part_id)
        return str(blanks[part_id])

    def protect(match: re.Match[str]) -> str:
        text = match.group(0)
        if match.group("fence") and blanks and _FENCE_MARKER.search(text):
            return "\n" + keep(_fence_with_blanks(text, match.group("mark"), place, placed, blanks)) + "\n"
        if match.group("fence") or match.group("code"):
            return text
        bid = match.group("bid")
        if bid in blanks and bid not in placed:
            return keep(place(bid))
        shown = html.escape(text, quote=False)
        if match.group("display") or match.group("inline"):
            inside = [m.group(1) for m in _MATH_MARKER.finditer(text) if m.group(1) in blanks]
            fresh = [b for b in dict.fromkeys(inside) if b not in placed]
            if fresh:
                inputs = "".join(place(b) for b in fresh)
                shown += f'<span class="formula-blanks">{inputs}</span>'
        return keep(shown)

    # Stray private-use markers in the source could forge a placeholder; drop them (they never render anyway).
    clean = source.replace(_OPEN, "").replace(_CLOSE, "")
    protected = _PROTECTED.sub(protect, clean)
    rendered = _parser().renderInline(protected) if inline else _parser().render(protected)
    # Safe to mark: markdown-it escapes all text (html is off); what is put back was escaped or built by the caller.
    out = _BLOCK_PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], rendered)
    out = _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], out)
    return Markup(out)  # noqa: S704


def _fence_with_blanks(
    fence: str, mark: str, place: Callable[[str], str], placed: list[str], blanks: Mapping[str, Markup]
) -> str:
    """A fenced code listing as <pre>, escaped, with its blanks' inputs at their markers."""
    first, _, rest = fence.partition("\n")
    body = rest[: rest.rstrip().rfind(mark)].rstrip("\n") if mark in rest else rest
    language = first.strip().lstrip(mark[0]).strip().split(" ")[0]
    pieces, last = [], 0
    for m in _FENCE_MARKER.finditer(body):
        pieces.append(html.escape(body[last : m.start()], quote=False))
        bid = m.group(1)
        pieces.append(place(bid) if bid in blanks and bid not in placed else html.escape(m.group(0), quote=False))
        last = m.end()
    pieces.append(html.escape(body[last:], quote=False))
    cls = f' class="language-{html.escape(language)}"' if language else ""
    return f'<pre class="with-blanks"><code{cls}>{"".join(pieces)}</code></pre>'


def render_inline(source: str) -> Markup:
    return render_markdown(source, inline=True)
