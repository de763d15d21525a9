"""Accept one more answer for a text blank, from the gradebook's most common wrong answers: the archive of a new
version whose problemset.yaml lists it.

The edit keeps the instructor's file as they wrote it (comments, key order, quoting, flow or block lists) through a
round-trip YAML parser, so the new version reads like the old one plus one line. The answer also joins the part's
``accept`` examples: every later load of the set checks that it is still accepted. The caller uploads the archive
through the usual gate, so the new version is stored only if its references still score full marks and its
known-wrong solutions still lose points.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.tokens import CommentToken

from app.errors import N_, Conflict, Invalid
from graders.answers.registry import answer_kind, grade_part, normalized_answer
from graders.answers.specs import AnswerSpec
from graders.input_limits import safe_yaml_load
from graders.kinds import kind_of
from graders.model import ProblemBase
from graders.problemset.archive import pack_files
from graders.problemset.loader import SET_FILE, LoadedSet

MAX_ALIAS_CHARS = 200  # the gradebook shows (and offers) an answer's first 200 characters


@dataclass(frozen=True)
class Alias:
    problem_id: str
    part_id: str  # b1, b2, ...
    answer: str  # as the gradebook shows it: the grader's normal form of what the students typed


def takes_alias(
    problem: ProblemBase, part: AnswerSpec, part_id: str = "", report: Mapping[str, Any] | None = None
) -> bool:
    """Whether one more accepted answer can be added to this part: its problem kind's parts are the ``parts`` of
    problemset.yaml, its answer kind keeps a list of accepted answers (``AnswerKind.aliases``), and its key is the
    same for every student (not a part ``report``'s gate saw the generator rewrite)."""
    return (
        kind_of(problem).takes_aliases
        and answer_kind(part.kind).takes_aliases
        and part_id not in rewritten_parts(problem, report or {})
    )


def rewritten_parts(problem: ProblemBase, report: Mapping[str, Any]) -> set[str]:
    """The parts of ``problem`` whose key its generator gives per variant, from the version's validation report.

    An alias is one written answer: added to such a part it would be right for one student's numbers and wrong for
    another's (and the variant's own ``answers`` replace the part's), so these parts take none; the generator says
    what each variant accepts. A report from before the gate recorded them counts every part of the problem."""
    if problem.generator is None:
        return set()
    recorded = report.get("variant_parts", {}).get(problem.id)
    return set(problem.part_ids()) if recorded is None else set(recorded)


def _part_index(loaded: LoadedSet, alias: Alias, report: Mapping[str, Any]) -> tuple[int, int, AnswerSpec]:
    """(problem index, part index, the part's spec), or Invalid naming what is wrong."""
    for i, problem in enumerate(loaded.spec.problems):
        if problem.id != alias.problem_id:
            continue
        if not kind_of(problem).takes_aliases:
            raise Invalid(N_("%(problem)s is a %(kind)s problem: only fill-in blanks take aliases"),
                          params={"problem": alias.problem_id, "kind": problem.kind})  # fmt: skip
        ids = problem.part_ids()
        if alias.part_id not in ids:
            raise Invalid(
                N_("%(problem)s has no blank %(part)s; it has %(parts)s"), field="part",
                params={"problem": alias.problem_id, "part": repr(alias.part_id), "parts": ", ".join(ids)},
            )  # fmt: skip

        j = ids.index(alias.part_id)
        part = problem.answer_parts()[j]
        if alias.part_id in rewritten_parts(problem, report):
            raise Invalid(
                N_("%(where)s has its own answer in each student's variant (the set's generator gives it): a written "
                   "alias would be right for one student's numbers only; accept it in the generator instead"),
                field="part", params={"where": f"{alias.problem_id} {alias.part_id}"},
            )  # fmt: skip
        if not takes_alias(problem, part):
            raise Invalid(
                N_("%(where)s is a %(kind)s blank: only text blanks take aliases (change its answer in "
                   "problemset.yaml)"),
                field="part", params={"where": f"{alias.problem_id} {alias.part_id}", "kind": part.kind},
            )  # fmt: skip
        return i, j, part
    raise Invalid(N_("no problem %(problem)s in %(set)s"), field="problem",
                  params={"problem": repr(alias.problem_id), "set": repr(loaded.spec.id)})  # fmt: skip


def is_known_wrong(answer: str, part: AnswerSpec) -> bool:
    """Whether ``answer`` reads as one of the part's known-wrong examples (``reject``): the instructor said so."""
    normal = normalized_answer(answer, part)
    return any(normalized_answer(example, part) == normal for example in part.reject)


def check_alias(loaded: LoadedSet, alias: Alias, report: Mapping[str, Any]) -> tuple[int, int, AnswerSpec]:
    """(problem index, part index, the part) the alias would join, in the version ``report`` validated; Invalid or
    Conflict when adding it makes no sense."""
    answer = alias.answer.strip()
    if not answer or len(answer) > MAX_ALIAS_CHARS or "\n" in answer:
        raise Invalid(N_("an alias is one line of 1 to %(num)s characters"), field="answer",
                      params={"num": MAX_ALIAS_CHARS})  # fmt: skip
    i, j, part = _part_index(loaded, alias, report)
    where = f"{alias.problem_id} {alias.part_id}"
    if grade_part(answer, part).correct:
        raise Conflict(N_("%(answer)s is already accepted for %(where)s by this version: regrade to give the points"),
                       params={"answer": repr(answer), "where": where})  # fmt: skip
    if is_known_wrong(answer, part):
        raise Conflict(
            N_("%(answer)s is listed under reject for %(where)s (a known-wrong answer the instructor wrote); edit "
               "problemset.yaml to change that"),
            field="answer", params={"answer": repr(answer), "where": where},
        )  # fmt: skip
    return i, j, part


def _round_trip() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never fold a long regex or prompt line
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _append(seq: CommentedSeq, value: str) -> None:
    """Append after the last item. The parser keeps, on the last item, its own end-of-line comment and the comment
    lines after it (which introduce the next key): the first stays on that item, the lines move after the new one.
    """
    last = len(seq) - 1
    slot = seq.ca.items.get(last) if last >= 0 else None
    seq.append(DoubleQuotedScalarString(value))
    token = slot[0] if slot else None
    if not isinstance(token, CommentToken):
        return
    own, _, following = token.value.partition("\n") if token.value.startswith("#") else ("", "", token.value)
    if own and slot is not None:
        slot[0] = CommentToken(own + "\n", token.start_mark)
    else:
        del seq.ca.items[last]
    if following.strip():
        following = following if following.startswith("\n") else "\n" + following
        seq.ca.items[len(seq) - 1] = [CommentToken(following, token.start_mark), None, None, None]


def _add_to(part: CommentedMap, key: str, value: str) -> None:
    existing = part.get(key)
    if isinstance(existing, CommentedSeq):
        _append(existing, value)
    else:  # absent (a part with only a regex): a new list, flow style like most accept lists
        seq = CommentedSeq([DoubleQuotedScalarString(value)])
        seq.fa.set_flow_style()
        part[key] = seq


def edited_spec(text: str, problem_index: int, part_index: int, answer: str, field: str = "answers") -> str:
    """problemset.yaml with ``answer`` added to one part's ``field`` (its kind's list of accepted answers) and
    ``accept``; everything else as written.

    The text is a stored version's, which passed the loader's YAML limits (no alias bombs) when it was uploaded.
    """
    yaml = _round_trip()
    try:
        data: Any = yaml.load(text)
    except YAMLError as exc:  # the loader reads more than this parser does: a key given twice, for one
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise Invalid(
            N_("problemset.yaml cannot be edited here (%(problem)s); add the alias to the file by hand"),
            field="part",
            params={"problem": problem},
        ) from exc
    part = data["problems"][problem_index]["parts"][part_index]
    _add_to(part, field, answer)
    _add_to(part, "accept", answer)
    out = io.StringIO()
    yaml.dump(data, out)
    edited = out.getvalue()
    _only_that_part_changed(text, edited, problem_index, part_index, answer, field)
    return edited


def _only_that_part_changed(
    before: str, after: str, problem_index: int, part_index: int, answer: str, field: str
) -> None:
    """Invalid unless ``after`` reads as ``before`` with ``answer`` added to that one part's lists: a list shared
    through a YAML anchor (``answers: *common``) or a merge key (``<<: *base``) would take it in every part that
    uses it."""
    expected = copy.deepcopy(safe_yaml_load(before))
    part = expected["problems"][problem_index]["parts"][part_index]
    for key in (field, "accept"):
        part[key] = [*(part.get(key) or []), answer]
    if safe_yaml_load(after) != expected:
        raise Invalid(
            N_("this blank's answers are shared with other parts through a YAML anchor or merge key; add the alias "
               "to problemset.yaml by hand"),
            field="part",
        )  # fmt: skip


def with_alias(loaded: LoadedSet, alias: Alias, report: Mapping[str, Any]) -> bytes:
    """The tar.gz of a new version: ``loaded``'s files with the alias in problemset.yaml (checked first against
    the version ``report`` validated)."""
    i, j, part = check_alias(loaded, alias, report)
    field = answer_kind(part.kind).aliases or ""  # check_alias: the part's kind takes aliases
    files = dict(loaded.files)
    files[SET_FILE] = edited_spec(loaded.text(SET_FILE), i, j, alias.answer.strip(), field).encode("utf-8")
    return pack_files(files)
