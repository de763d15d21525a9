"""Per-question statistics: how many tried, how well they did at best, and which blanks or checks trip them up."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment
from app.courses.permissions import Action
from app.gradebook.schemas import (
    BlankWrongAnswers,
    CheckStat,
    MutantLikeness,
    ProblemStats,
    ScoreBin,
    SetStats,
    WrongAnswer,
)
from app.gradebook.service import counted_rule
from app.gradebook.variant_stats import variant_breakdown
from app.problemsets.aliases import is_known_wrong, rewritten_parts, takes_alias
from app.problemsets.models import ProblemSetVersion
from app.problemsets.service import spec_of
from app.submissions.attempts import EPS, Column, best_attempts, columns, load_attempts, student_ids
from app.submissions.models import CheckResultRow, Submission
from graders.answers.normalize import collapse_whitespace
from graders.answers.registry import ANSWER_KINDS, grade_part, normalized_answer
from graders.answers.specs import AnswerSpec
from graders.problemset.likeness import failure_vector, mutant_failures

# Rubric rows say "awaiting manual grading" until an instructor scores the whole submission; they are not a pass rate.
_NOT_A_CHECK = "manual"


def set_stats(session: Session, *, access: Access, slug: str, offering_id: int | None = None) -> SetStats:
    """Statistics for every problem of an assignment in one of the caller's offerings, over its students'
    attempts at any version. 404 outside the caller's offerings."""
    found = courses.resolve(session, access, slug, offering_id=offering_id, action=Action.GRADEBOOK)
    assignment = found.assignment
    version = courses.version_of(session, assignment)
    attempts = load_attempts(session, assignment)
    best = best_attempts(attempts, counted_rule(assignment, spec_of(version)))
    checks = _check_stats(session, assignment)
    # A student's answer text is their work: only staff who may read submissions see it (observers get the counts).
    wrong = _wrong_answers(
        session, assignment, version, texts=access.can(assignment.offering_id, Action.READ_SUBMISSIONS)
    )
    problems = []
    for col in columns(version, attempts):
        mine = [a for a in attempts if a.problem_id == col.id]
        counted = [a for (_, pid), a in best.items() if pid == col.id]
        scores = [a.final_score or 0.0 for a in counted]
        stats = _problem_stats(col, len(mine), len({a.user_id for a in mine}), scores, checks[col.id])
        # Work awaiting hand grading is pending, not a low score: the histogram leaves it out and says how many.
        waiting = [a for a in counted if col.rubric_points > 0 and a.manual_score is None]
        stats.pending_manual = len(waiting)
        stats.histogram = histogram([a.final_score or 0.0 for a in counted if a not in waiting], col.max_score)
        stats.wrong_answers = wrong.get(col.id, [])
        stats.variants, stats.by_parameter = variant_breakdown(
            session, assignment.problem_set_id, col.id, counted, col.max_score
        )
        gate = version.validation_report.get("mutant_gates", {}).get(col.id)
        if isinstance(gate, dict) and counted:
            stats.mutants = _mutant_likeness(session, gate, [a.id for a in counted])
        problems.append(stats)
    return SetStats(problem_set=slug, offering=assignment.offering_id, title=version.problem_set.title,
                    version=version.number, problems=problems)  # fmt: skip


def _problem_stats(
    col: Column, submissions: int, attempted: int, scores: list[float], checks: list[CheckStat]
) -> ProblemStats:
    full = sum(1 for s in scores if col.max_score > 0 and s >= col.max_score - EPS)
    hardest = min(checks, key=lambda c: c.pass_rate, default=None)
    return ProblemStats(
        id=col.id,
        title=col.title,
        max_score=col.max_score,
        submissions=submissions,
        students_attempted=attempted,
        students_graded=len(scores),
        mean_best=round(statistics.fmean(scores), 4) if scores else None,
        median_best=round(statistics.median(scores), 4) if scores else None,
        full_marks_fraction=round(full / len(scores), 4) if scores else None,
        checks=checks,
        hardest_check=hardest.name if hardest is not None and hardest.pass_rate < 1.0 else None,
    )


MAX_BINS = 10


def histogram(scores: list[float], max_score: float) -> list[ScoreBin]:
    """Counted scores in bins over [0, max_score]. A whole maximum up to 10 gets one bin per point (k <= score <
    k + 1) and a last one for full marks alone; any other maximum ten equal bins, the last holding max_score too."""
    if max_score <= 0:
        return []
    if float(max_score).is_integer() and max_score <= MAX_BINS:
        edges = [(float(k), float(k + 1)) for k in range(int(max_score))] + [(max_score, max_score)]
    else:
        width = max_score / MAX_BINS
        edges = [(round(i * width, 4), round((i + 1) * width, 4)) for i in range(MAX_BINS)]
    counts = [0] * len(edges)
    for score in scores:
        index = next((i for i, (low, high) in enumerate(edges) if score < high - EPS), len(edges) - 1)
        counts[index] += 1
    return [ScoreBin(low=low, high=high, students=n) for (low, high), n in zip(edges, counts, strict=True)]


def _check_stats(session: Session, assignment: Assignment) -> dict[str, list[CheckStat]]:
    """Problem id -> pass rate of each check over every graded student attempt (the same check across versions)."""
    rows = session.execute(
        select(
            Submission.problem_id,
            CheckResultRow.name,
            CheckResultRow.category,
            func.min(CheckResultRow.position).label("position"),
            func.count().label("results"),
            func.sum(case((CheckResultRow.passed.is_(True), 1), else_=0)).label("passed"),
        )
        .join(Submission, CheckResultRow.submission_id == Submission.id)
        .where(
            Submission.assignment_id == assignment.id,
            Submission.user_id.in_(student_ids(session, assignment.offering_id)),
            CheckResultRow.category != _NOT_A_CHECK,
        )
        .group_by(Submission.problem_id, CheckResultRow.name, CheckResultRow.category)
    ).all()
    out: dict[str, list[CheckStat]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r.problem_id, r.position, r.name)):
        passed = int(r.passed or 0)
        out[r.problem_id].append(
            CheckStat(
                name=r.name,
                category=r.category,
                results=r.results,
                passed=passed,
                pass_rate=round(passed / r.results, 4),
            )
        )
    return out


TOP_WRONG = 5
SHOWN_CHARS = 200  # an answer may be 10,000 characters; the table shows its start


def _shorten(answer: str) -> str:
    return answer if len(answer) <= SHOWN_CHARS else answer[: SHOWN_CHARS - 1] + "…"


def _wrong_answers(
    session: Session, assignment: Assignment, current: ProblemSetVersion, *, texts: bool
) -> dict[str, list[BlankWrongAnswers]]:
    """Problem id -> per blank, the wrong answers most students gave, grouped by the grader's own normalisation
    (under the spec of the version each attempt was graded at). Every graded student attempt counts, each student
    once per answer; blanks left empty are not wrong answers worth an alias. ``texts`` False leaves the answers out.
    Each answer says whether the ``current`` version accepts it (an alias added since the attempts were graded)."""
    rows = session.execute(
        select(Submission.user_id, Submission.problem_id, Submission.problem_set_version_id, Submission.payload,
               CheckResultRow.name)
        .join(Submission, CheckResultRow.submission_id == Submission.id)
        .where(
            Submission.assignment_id == assignment.id,
            Submission.user_id.in_(student_ids(session, assignment.offering_id)),
            CheckResultRow.category == "answer",
            CheckResultRow.passed.is_(False),
        )
    ).all()  # fmt: skip
    parts: dict[int, dict[str, dict[str, AnswerSpec]]] = {}  # version id -> problem id -> part id -> spec
    students: dict[tuple[str, str], dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    seen: dict[tuple[int, str, str, str], str | None] = {}  # one normalisation per distinct text
    for r in rows:
        if r.problem_set_version_id not in parts:
            parts[r.problem_set_version_id] = _part_specs(session, r.problem_set_version_id)
        spec = parts[r.problem_set_version_id].get(r.problem_id, {}).get(r.name)
        answers = r.payload.get("answers") if isinstance(r.payload, dict) else None
        raw = answers.get(r.name) if isinstance(answers, dict) else None
        if spec is None or not isinstance(raw, str) or not raw.strip():
            continue
        key = (r.problem_set_version_id, r.problem_id, r.name, raw)
        if key not in seen:
            seen[key] = normalized_answer(raw, spec)
        # An answer the grader cannot read at all (a formula that does not parse) is grouped as typed.
        group = seen[key] or collapse_whitespace(raw)
        students[(r.problem_id, r.name)][group].add(r.user_id)
    now = _part_specs(session, current.id) if current.id not in parts else parts[current.id]
    aliased = {
        (problem.id, pid)
        for problem in spec_of(current).problems
        for pid, spec in zip(problem.part_ids(), problem.answer_parts(), strict=False)
        if takes_alias(problem, spec, pid, current.validation_report)
    }
    # A part whose key each variant gives: the current spec's own key is one variant's, so it cannot say whether an
    # answer is accepted now or known wrong.
    varied = {
        (problem.id, pid)
        for problem in spec_of(current).problems
        for pid in rewritten_parts(problem, current.validation_report)
    }
    out: dict[str, list[BlankWrongAnswers]] = defaultdict(list)
    # Part ids are b1, b2, ... b10: in part order, not text order.
    for (problem_id, part), groups in sorted(students.items(), key=lambda kv: (kv[0][0], len(kv[0][1]), kv[0][1])):
        top = sorted(((answer, len(users)) for answer, users in groups.items()), key=lambda kv: (-kv[1], kv[0]))
        spec_now = None if (problem_id, part) in varied else now.get(problem_id, {}).get(part)
        out[problem_id].append(
            BlankWrongAnswers(
                part=part,
                wrong_students=len(set().union(*groups.values())),
                top=[
                    WrongAnswer(
                        answer=_shorten(answer) if texts else None,
                        students=n,
                        accepted_now=_accepted_now(answer, spec_now) if texts else None,
                        known_wrong=texts and _known_wrong(answer, spec_now),
                    )
                    for answer, n in top[:TOP_WRONG]
                ],
                takes_aliases=(problem_id, part) in aliased,
            )
        )
    return out


def _accepted_now(answer: str, spec: AnswerSpec | None) -> bool | None:
    """Whether the current version's part accepts ``answer``; None where that is unknown: no such part now, an
    answer cut short for the table, or a kind whose grading may wait on a worker (a formula: the SymPy pool)."""
    if spec is None or not ANSWER_KINDS[spec.kind].pure or len(answer) > SHOWN_CHARS:
        return None
    return grade_part(answer, spec).correct


def _known_wrong(answer: str, spec: AnswerSpec | None) -> bool:
    """Whether the current version lists ``answer`` among its known-wrong examples (``reject``): the instructor
    said so, so the page offers no alias for it."""
    return spec is not None and ANSWER_KINDS[spec.kind].pure and is_known_wrong(answer, spec)


def _part_specs(session: Session, version_id: int) -> dict[str, dict[str, AnswerSpec]]:
    """Problem id -> part id -> the spec of each automatically graded part, at one version of the set."""
    version = session.get(ProblemSetVersion, version_id)
    if version is None:
        return {}
    out: dict[str, dict[str, AnswerSpec]] = {}
    for problem in spec_of(version).problems:
        specs = problem.answer_parts()
        out[problem.id] = {
            pid: spec for pid, spec in zip(problem.part_ids(), specs, strict=False) if ANSWER_KINDS[spec.kind].auto
        }
    return out


def _mutant_likeness(session: Session, gate: dict[str, Any], counted_ids: list[int]) -> list[MutantLikeness]:
    """Per mutant of the gate's matrix, how many of the counted submissions behave like it (graders.problemset.
    likeness: the one matcher, also behind the student's "looks like a known mistake" hint)."""
    results: dict[int, list[tuple[str, bool]]] = defaultdict(list)
    for sid, name, passed in session.execute(
        select(CheckResultRow.submission_id, CheckResultRow.name, CheckResultRow.passed).where(
            CheckResultRow.submission_id.in_(counted_ids), CheckResultRow.category != _NOT_A_CHECK
        )
    ):
        results[sid].append((name, passed))
    vectors = [failure_vector(results[sid], gate) for sid in counted_ids]
    order = [str(c["name"]) for c in gate.get("checks", [])]
    return [
        MutantLikeness(mutant=path, failed_checks=[n for n in order if n in fails], students=vectors.count(fails))
        for path, fails in mutant_failures(gate)
    ]
