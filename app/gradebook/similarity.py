"""Code similarity for instructors: for one code problem of an assignment, the pairs of students whose counted
submissions share the most code.

Fingerprints are copydetect's (token k-grams, winnowed: the idea of MOSS): identifiers, literals and comments are
normalised by its Python tokenizer, so renaming variables or reformatting does not hide a copy. The set's reference
solutions are boilerplate: code every honest student may come close to (the function signature, the standard
formulation) does not count toward a pair's score. A score is the larger of the two shares (the part of one
student's fingerprinted code also found in the other's), so copying a short file into a long one still shows.

This is a report for people to read, never a penalty: nothing here changes a grade, and students never see it.
Fingerprints are kept in this process per code and boilerplate (``_FINGERPRINTS``), so a run after new submissions
arrive fingerprints only those; the pairwise comparison itself is cheap (sets of hashes).

copydetect hashes each k-gram with Python's ``hash()``, which is salted per process (PYTHONHASHSEED): winnowing then
keeps other k-grams in each process, and the same class scored differently after a restart (in a 60-student class,
755 or 960 pairs sharing code, a pair at 100 % or 98.5 %). ``_use_stable_hashes`` gives copydetect a hash of the
k-gram's bytes instead (blake2b, 8 bytes), the same in every process, so a report can be run again and compared.
"""

from __future__ import annotations

import csv
import hashlib
import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.courses import service as courses
from app.courses.access import Access
from app.courses.permissions import Action
from app.errors import N_, Invalid
from app.gradebook.service import counted_rule
from app.problemsets.service import loaded_version, spec_of
from app.submissions.attempts import best_attempts, load_attempts
from app.submissions.models import Submission
from app.users.models import User

NOISE_TOKENS = 25  # a match shorter than this many tokens is noise (copydetect's default noise threshold)
GUARANTEE_TOKENS = 30  # a match this long is always found (its guarantee threshold): window = 30 - 25 + 1
_WINDOW = GUARANTEE_TOKENS - NOISE_TOKENS + 1
SHOWN_PAIRS = 100
_CACHE_SIZE = 5000


@dataclass(frozen=True)
class Entry:
    """One student's counted submission at the problem."""

    user_id: int
    name: str
    email: str
    submission_id: int
    code: str


@dataclass(frozen=True)
class Pair:
    a: Entry
    b: Entry
    score: float  # max(share_a, share_b), 0..1
    share_a: float
    share_b: float
    tokens: int  # overlapping tokens
    slices_a: tuple[tuple[int, int], ...]  # character ranges of a's code found in b's
    slices_b: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Report:
    slug: str
    offering_id: int
    problem_id: str
    students: int
    pairs: list[Pair]


def counted_entries(
    session: Session, settings: Settings, access: Access, slug: str, offering_id: int | None, problem_id: str
) -> tuple[int, list[Entry], list[str]]:
    """(offering id, the students' counted code submissions at ``problem_id``, the reference solutions' code).
    A 404 outside the caller's offerings (the gradebook's permission: instructors, TAs, observers do not read
    submissions, so they are refused here)."""
    found = courses.resolve(session, access, slug, offering_id=offering_id, action=Action.READ_SUBMISSIONS)
    assignment = found.assignment
    version = courses.version_of(session, assignment)
    spec = spec_of(version)
    problem = spec.problem(problem_id)
    if problem is None or not hasattr(problem, "entrypoints"):
        raise Invalid(N_("%(problem)s is not a code problem of this set."), field="problem",
                      params={"problem": problem_id[:64]})  # fmt: skip
    attempts = [a for a in load_attempts(session, assignment) if a.problem_id == problem_id]
    best = best_attempts(attempts, counted_rule(assignment, spec))
    ids = [a.id for a in best.values()]
    rows = session.execute(
        select(Submission.id, Submission.payload, User.id, User.email, User.display_name)
        .join(User, User.id == Submission.user_id)
        .where(Submission.id.in_(ids))
        .order_by(User.email)
    ).all()
    entries = [
        Entry(user_id=uid, name=display or email, email=email, submission_id=sid, code=str(payload.get("code", "")))
        for sid, payload, uid, email, display in rows
        if isinstance(payload, dict) and isinstance(payload.get("code"), str)
    ]
    # The set's files: its reference solutions are the boilerplate.
    return assignment.offering_id, entries, _references(loaded_version(settings, version), problem)


def _references(loaded: Any, problem: Any) -> list[str]:
    prefix = problem.solutions_dir().rstrip("/") + "/"
    return [
        data.decode("utf-8", "replace")
        for name, data in sorted(loaded.files.items())
        if name.startswith(prefix) and name.endswith(".py")
    ]


_FINGERPRINTS: OrderedDict[tuple[str, str], Any] = OrderedDict()  # (code's sha256, boilerplate key)
_LOCK = threading.Lock()


def _stable_kgram_hashes(string: str, k: int) -> Any:
    """copydetect.utils.hashed_kgrams with a hash that is the same in every process (see the module's docstring)."""
    import numpy as np

    blake = hashlib.blake2b
    hashes = [
        int.from_bytes(blake(string[at : at + k].encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little",
                       signed=True)
        for at in range(len(string) - k + 1)
    ]  # fmt: skip
    return np.array(hashes, dtype=np.int64)


def _use_stable_hashes() -> None:
    """Point copydetect at the stable k-gram hash; its fingerprinting looks the function up in its own module at each
    call (copydetect.utils.get_document_fingerprints), so this covers CodeFingerprint too."""
    import copydetect.utils  # here: only this report pays for the library (and numpy)

    if copydetect.utils.hashed_kgrams is not _stable_kgram_hashes:
        with _LOCK:
            copydetect.utils.hashed_kgrams = _stable_kgram_hashes


def _fingerprint(key: tuple[str, str] | None, code: str, boilerplate: list[int]) -> Any:
    from copydetect import CodeFingerprint

    _use_stable_hashes()
    if key is not None:
        with _LOCK:
            cached = _FINGERPRINTS.get(key)
            if cached is not None:
                _FINGERPRINTS.move_to_end(key)
                return cached
    made = CodeFingerprint("submission.py", NOISE_TOKENS, _WINDOW, boilerplate=boilerplate, fp=io.StringIO(code))
    if key is not None:
        with _LOCK:
            _FINGERPRINTS[key] = made
            while len(_FINGERPRINTS) > _CACHE_SIZE:
                _FINGERPRINTS.popitem(last=False)
    return made


def boilerplate_of(references: list[str]) -> tuple[list[int], str]:
    """Every k-gram hash of the reference solutions (window 1: all of them, as copydetect does), and a key."""
    from copydetect import CodeFingerprint

    _use_stable_hashes()
    hashes: set[int] = set()
    for code in references:
        hashes |= set(CodeFingerprint("reference.py", NOISE_TOKENS, 1, fp=io.StringIO(code)).hashes)
    key = hashlib.sha256(repr(sorted(hashes)).encode()).hexdigest()[:16]
    return sorted(hashes), key


def similar_pairs(
    entries: list[Entry], references: list[str], progress: Callable[[int, int], None] | None = None
) -> list[Pair]:
    """Every pair of ``entries`` that shares code beyond the boilerplate, most similar first."""
    from copydetect import compare_files

    boilerplate, bp_key = boilerplate_of(references)
    prints = []
    total = len(entries) + len(entries) * (len(entries) - 1) // 2
    done = 0
    for entry in entries:
        digest = hashlib.sha256(entry.code.encode("utf-8", "surrogatepass")).hexdigest()
        prints.append(_fingerprint((digest, bp_key), entry.code, boilerplate))
        done += 1
        if progress is not None:
            progress(done, total)
    pairs: list[Pair] = []
    for i in range(len(entries)):
        for j in range(i + 1, len(entries)):
            done += 1
            if not prints[i].hashes & prints[j].hashes:
                continue
            tokens, (share_a, share_b), (slices_a, slices_b) = compare_files(prints[i], prints[j])
            if tokens:
                pairs.append(
                    Pair(
                        a=entries[i],
                        b=entries[j],
                        score=float(max(share_a, share_b)),
                        share_a=float(share_a),
                        share_b=float(share_b),
                        tokens=int(tokens),
                        slices_a=_ranges(slices_a),
                        slices_b=_ranges(slices_b),
                    )
                )
        if progress is not None:
            progress(done, total)
    pairs.sort(key=lambda p: (-p.score, -p.tokens, p.a.email, p.b.email))
    return pairs


def _ranges(slices: Any) -> tuple[tuple[int, int], ...]:
    if len(slices) != 2 or len(slices[0]) == 0:
        return ()
    return tuple((int(start), int(end)) for start, end in zip(slices[0], slices[1], strict=True))


def marked(code: str, ranges: tuple[tuple[int, int], ...]) -> list[tuple[str, bool]]:
    """``code`` cut into (text, matched) runs, for the side-by-side view to escape and mark."""
    out: list[tuple[str, bool]] = []
    at = 0
    for start, end in sorted(ranges):
        start, end = max(start, at), min(end, len(code))
        if start >= end:
            continue
        if start > at:
            out.append((code[at:start], False))
        out.append((code[start:end], True))
        at = end
    if at < len(code):
        out.append((code[at:], False))
    return out


def to_csv(report: Report) -> str:
    """The pairs as CSV: both students (name, email), the score and each share in percent, the shared tokens."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["student_a", "email_a", "student_b", "email_b", "score_pct", "share_a_pct", "share_b_pct",
                     "shared_tokens", "submission_a", "submission_b"])  # fmt: skip
    for p in report.pairs:
        writer.writerow([_cell(p.a.name), p.a.email, _cell(p.b.name), p.b.email, round(100 * p.score, 1),
                         round(100 * p.share_a, 1), round(100 * p.share_b, 1), p.tokens, p.a.submission_id,
                         p.b.submission_id])  # fmt: skip
    return buf.getvalue()


def _cell(text: str) -> str:
    """A spreadsheet does not run a name as a formula (CSV injection)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
