"""The input of one answer blank, built for its place in the prompt (see markdown.render_prompt).

Each blank carries its marker as its label, the format hint (or, after grading, the feedback) as its description,
the last answer, a right/wrong mark once graded, and, for kinds with a preview, where to ask how the text parses.
"""

from __future__ import annotations

from dataclasses import dataclass
from gettext import NullTranslations
from typing import Any
from urllib.parse import quote

from markupsafe import Markup

from graders.answers.normalize import MAX_ANSWER_CHARS
from graders.answers.registry import ANSWER_KINDS


@dataclass(frozen=True)
class Mark:
    """A blank's result in the latest graded attempt."""

    passed: bool
    feedback: str


def field_id(problem_id: str, part_id: str) -> str:
    return f"{problem_id}-{part_id}"


def blank_html(
    *,
    slug: str,
    problem_id: str,
    part: dict[str, Any],
    given: str,
    mark: Mark | None,
    multi_part: bool,
    tr: NullTranslations | None = None,
    offering: int | None = None,
) -> Markup:
    """The label, input, mark, note and preview of one blank (escaped throughout; safe to put in the prompt).

    ``tr``: the page's language for the words this adds and the format hint (the grader's feedback stays as
    written).
    ``offering``: the page's offering, carried by the preview's address (the set may be assigned in several).
    """
    tr = tr or NullTranslations()
    pid = part["id"]
    fid = field_id(problem_id, pid)
    note_id = f"{fid}-note"
    widget = part["widget"]
    has_preview = ANSWER_KINDS[part["kind"]].preview is not None
    n = 1 if part["points"] == 1 else 2  # points may be fractional: English says "1 pt", "1.5 pts"
    points = " · " + tr.ngettext("%(num)s pt", "%(num)s pts", n) % {"num": f"{part['points']:g}"} if multi_part else ""
    hint = f"{tr.gettext(part['hint'])}{points}"  # the kinds' hints are marked for the catalogs (N_)
    attrs = Markup(
        'id="{fid}" name="answer.{pid}" aria-describedby="{note}" maxlength="{limit}" data-limit="{limit}"'
    ).format(fid=fid, pid=pid, note=note_id, limit=MAX_ANSWER_CHARS)
    if has_preview:
        url = f"/sets/{quote(slug)}/problems/{quote(problem_id)}/preview?part={quote(pid)}"
        if offering is not None:
            url += f"&offering={offering}"
        attrs += Markup(' data-preview="{url}"').format(url=url)
    if widget == "essay":
        control = Markup('<textarea {a} rows="8" class="essay">{v}</textarea>').format(a=attrs, v=given)
    elif widget == "matrix":
        control = Markup('<textarea {a} rows="2" class="code matrix-input" spellcheck="false">{v}</textarea>').format(
            a=attrs, v=given
        )
    else:
        control = Markup('<input {a} type="text" autocomplete="off" spellcheck="false" value="{v}">').format(
            a=attrs, v=given
        )
    state = ""
    mark_html = Markup("")
    note = hint
    if mark is not None:
        state = " right" if mark.passed else " wrong"
        word = tr.gettext("correct") if mark.passed else tr.gettext("not right")
        mark_html = Markup('<span class="blank-mark" aria-hidden="true">{sym}</span>').format(
            sym="✓" if mark.passed else "✗"
        )
        note = f"{word}: {mark.feedback}" if not mark.passed and mark.feedback else f"{word} · {hint}"
    block = " block" if widget in ("essay", "matrix") else ""
    preview = Markup('<span class="blank-preview" aria-hidden="true"></span>') if has_preview else Markup("")
    return Markup(
        '<span class="blank{state}{block}" data-part="{pid}">'
        '<label class="blank-id" for="{fid}">({pid})</label>{control}{mark}'
        '<span class="blank-note" id="{note_id}" data-hint="{hint}">{note}</span>{preview}</span>'
    ).format(
        state=state,
        block=block,
        pid=pid,
        fid=fid,
        control=control,
        mark=mark_html,
        note_id=note_id,
        hint=hint,
        note=note,
        preview=preview,
    )
