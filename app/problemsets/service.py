"""Problem sets: validate and store uploads (a re-upload makes a new version), build the student view."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import N_, Conflict, Forbidden, Invalid, NotFound
from app.problemsets import checking_code
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.problemsets.storage import load_version
from app.problemsets.variants import variant_checkers
from graders.code.grader import CodeGraderLike
from graders.grade import problem_view, validate_set
from graders.model import ProblemSetSpec
from graders.problemset.archive import ArchiveLimits, pack_files, unpack_archive
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import LoadedSet, load_problem_set
from graders.problemset.validate import ValidationReport
from graders.problemset.variant_gate import DEFAULT_DRAWS
from graders.problemset.variants import Variant, VariantSource

log = logging.getLogger(__name__)


class ProblemSetRejected(Invalid):
    """The set failed validation; ``report`` says why. Nothing was stored."""

    def __init__(self, report: ValidationReport) -> None:
        super().__init__("the problem set is invalid", extra={"report": report.to_dict()})
        self.report = report


def archive_limits(settings: Settings) -> ArchiveLimits:
    return ArchiveLimits(
        max_archive_bytes=settings.max_upload_bytes,
        max_files=settings.max_archive_files,
        max_unpacked_bytes=settings.max_unpacked_bytes,
    )


def load_upload(data: bytes, filename: str, settings: Settings, workdir: Path) -> LoadedSet:
    """Unpack an uploaded archive safely and parse it; raises ProblemSetInvalid."""
    root = unpack_archive(data, filename, workdir, archive_limits(settings))
    return load_problem_set(root)


def ingest(
    session: Session,
    *,
    loaded: LoadedSet,
    user_id: int | None,
    grader: CodeGraderLike | None,
    progress: Callable[[str], None] | None = None,
    max_grading_s: float | None = None,
    may_replace: Callable[[ProblemSet], bool] | None = None,
    based_on: int | None = None,
    variants: VariantSource | None = None,
    variant_draws: int = DEFAULT_DRAWS,
) -> tuple[ProblemSetVersion, ValidationReport, bool]:
    """Validate ``loaded`` completely, then store it as a new version (or return the identical latest one).

    ``may_replace`` says whether the uploader may add a version to an existing set of that id (an instructor of
    one course must not replace another course's set); refused before anything is validated or stored.
    ``based_on`` is the version number an edit of a stored version started from: if another version was stored
    since, the edit would silently drop it, so it is refused (Conflict). Two edits of the same version validated
    at once cannot both be stored either: the second meets the unique version number.

    Returns:
        (version, report, created): created is False when the latest version already has this content.
    """
    problem_set = session.scalar(select(ProblemSet).where(ProblemSet.slug == loaded.spec.id))
    if problem_set is not None and may_replace is not None and not may_replace(problem_set):
        raise Forbidden(
            N_("a problem set %(set)s already exists in a course you do not teach; change the set's id"),
            field="file", params={"set": repr(loaded.spec.id)},
        )  # fmt: skip
    latest = _latest(session, problem_set.id) if problem_set else None
    if based_on is not None and (latest.number if latest else None) != based_on:
        raise Conflict(
            N_("%(set)s has a newer version than %(version)s now; reload the gradebook and try again"),
            field="file", params={"set": repr(loaded.spec.id), "version": based_on},
        )  # fmt: skip
    if latest is not None and latest.content_hash == loaded.content_hash:
        return latest, ValidationReport(), False
    report = validate_set(loaded, code_grader=grader, progress=progress, max_grading_s=max_grading_s,
                          variants=variants, variant_draws=variant_draws)  # fmt: skip
    if not report.ok:
        raise ProblemSetRejected(report)
    if based_on is not None and problem_set is not None:  # again: another edit may have been stored meanwhile
        newest = _latest(session, problem_set.id)
        if newest is not None and newest.number != based_on:
            raise Conflict(
                N_("%(set)s got version %(newer)s while this edit of version %(version)s was validated; reload the "
                   "gradebook and try again"),
                field="file", params={"set": repr(loaded.spec.id), "newer": newest.number, "version": based_on},
            )  # fmt: skip
    try:
        return _store(session, loaded=loaded, problem_set=problem_set, latest=latest, report=report, user_id=user_id,
                      checked_with=checked_with(loaded.spec, grader))  # fmt: skip
    except IntegrityError as exc:
        session.rollback()
        again = (
            N_("another version of %(set)s was stored at the same moment; reload the gradebook and try again")
            if based_on is not None
            else N_("another version of %(set)s was stored at the same moment; upload again")
        )
        raise Conflict(again, field="file", params={"set": repr(loaded.spec.id)}) from exc


def _store(
    session: Session,
    *,
    loaded: LoadedSet,
    problem_set: ProblemSet | None,
    latest: ProblemSetVersion | None,
    report: ValidationReport,
    user_id: int | None,
    checked_with: str | None,
) -> tuple[ProblemSetVersion, ValidationReport, bool]:
    if problem_set is None:
        problem_set = ProblemSet(slug=loaded.spec.id, title=loaded.spec.title)
        session.add(problem_set)
        session.flush()
    problem_set.title = loaded.spec.title
    version = ProblemSetVersion(
        problem_set_id=problem_set.id,
        number=(latest.number + 1) if latest else 1,
        label=loaded.spec.version,
        content_hash=loaded.content_hash,
        spec=loaded.spec.model_dump(mode="json"),
        archive=pack_files(loaded.files),
        validation_report=report.to_dict(),
        checked_with=checked_with,
        created_by_id=user_id,
    )
    session.add(version)
    session.flush()
    return version, report, True


def checked_with(spec: ProblemSetSpec, grader: CodeGraderLike | None) -> str | None:
    """The checking-code version a report made with ``grader`` is complete for; None when a code set was
    validated without a grader (no mutant gate ran), so `serve` gates it before trusting it as checked."""
    if grader is None and any(p.instructor_code() is not None for p in spec.problems):
        return None
    return checking_code.version_for(spec)


def is_current(version: ProblemSetVersion) -> bool:
    """Whether the version's stored gate report was made by the checking code of this process."""
    return version.checked_with is not None and version.checked_with == checking_code.version_for(spec_of(version))


def store_validated(
    session: Session, *, loaded: LoadedSet, report: ValidationReport, based_on: int | None
) -> tuple[ProblemSetVersion | None, bool, ProblemSetVersion | None]:
    """Store a set that passed a full gate outside any session (serve's background loader, which assigns it in
    the default offering). ``based_on``: the latest version's number when the gate started; if another
    version was stored meanwhile (an upload), that one stays the latest and nothing is stored.

    Returns:
        (version, created, replaced): version is the latest after this (None: none), replaced the one before.
    """
    if not report.ok:
        raise ValueError("only a set that passed its gate is stored")
    problem_set = session.scalar(select(ProblemSet).where(ProblemSet.slug == loaded.spec.id))
    latest = _latest(session, problem_set.id) if problem_set else None
    if latest is not None and latest.content_hash == loaded.content_hash:
        return latest, False, latest
    if (latest.number if latest is not None else None) != based_on:
        log.warning("%s: version %s was stored while the folder's version was checked; it stays the latest",
                    loaded.spec.id, latest.number if latest is not None else "-")  # fmt: skip
        return latest, False, latest
    version, _, _ = _store(session, loaded=loaded, problem_set=problem_set, latest=latest, report=report,
                           user_id=None, checked_with=checking_code.version_for(loaded.spec))  # fmt: skip
    return version, True, latest


def record_check(session: Session, version: ProblemSetVersion, report: ValidationReport) -> None:
    """A live version passed its gate again with this process's checking code: its report is the new one (the
    points students see come from it) and the key says what made it."""
    if not report.ok:
        raise ValueError("only a passed gate replaces a version's report")
    version.validation_report = report.to_dict()
    version.checked_with = checking_code.version_for(spec_of(version))


def warn_replaced(slug: str, version: ProblemSetVersion, replaced: ProblemSetVersion | None) -> None:
    """Log that a folder replaced a version made on the web (its edits may be lost, its archive has them)."""
    if replaced is not None and replaced.created_by_id is not None:
        log.warning(
            "%s: version %d from the folder replaces version %d, which was made on the web; if that one's edits "
            "(an alias accepted from the gradebook) are not in the folder, they are gone from the new version "
            "(GET /api/v1/problem-sets/%s/versions/%d/archive has them)",
            slug, version.number, replaced.number, slug, replaced.number,
        )  # fmt: skip


def latest_of(session: Session, slug: str) -> ProblemSetVersion | None:
    problem_set = session.scalar(select(ProblemSet).where(ProblemSet.slug == slug))
    return _latest(session, problem_set.id) if problem_set is not None else None


def upload(
    session: Session,
    *,
    data: bytes,
    filename: str,
    settings: Settings,
    user_id: int,
    grader: CodeGraderLike | None,
    may_replace: Callable[[ProblemSet], bool] | None = None,
    progress: Callable[[str], None] | None = None,
    on_loaded: Callable[[LoadedSet], None] | None = None,
    based_on: int | None = None,
) -> tuple[ProblemSetVersion, ValidationReport, bool]:
    """Unpack, validate and store an uploaded archive; ``on_loaded`` sees the parsed set before the (long)
    validation, ``progress`` gets one line per file the mutant gate grades."""
    with tempfile.TemporaryDirectory(prefix="upload-") as tmp:
        try:
            loaded = load_upload(data, filename, settings, Path(tmp))
        except ProblemSetInvalid as exc:
            report = ValidationReport(errors=exc.errors)
            raise ProblemSetRejected(report) from exc
        if on_loaded is not None:
            on_loaded(loaded)
        return ingest(
            session,
            loaded=loaded,
            user_id=user_id,
            grader=grader,
            progress=progress,
            max_grading_s=settings.grading_lease_s,
            may_replace=may_replace,
            based_on=based_on,
            variants=variant_checkers(settings),
            variant_draws=settings.variant_draws,
        )


def gate_files(loaded: LoadedSet) -> int:
    """How many files the mutant gate will grade (each code problem's solutions and mutants), for progress."""
    count = 0
    for problem in loaded.spec.problems:
        code = problem.instructor_code()
        if code is not None:
            for folder in (code.solutions, code.mutants):
                prefix = folder.rstrip("/") + "/"
                count += sum(
                    1 for name in loaded.files if name.startswith(prefix) and name.endswith(".py")
                    and "/" not in name[len(prefix):]
                )  # fmt: skip
    return count


def folder_is_older(session: Session, loaded: LoadedSet, latest: ProblemSetVersion) -> bool:
    """Whether ``loaded`` is the content of a version older than ``latest`` (logged: the latest stays current)."""
    if latest.content_hash == loaded.content_hash:
        return False
    older = session.scalar(
        select(ProblemSetVersion.number).where(
            ProblemSetVersion.problem_set_id == latest.problem_set_id,
            ProblemSetVersion.content_hash == loaded.content_hash,
        )
    )
    if older is None:
        return False
    log.warning(
        "%s: the folder holds version %d; version %d, made since on the web, stays current (download it to update "
        "the folder: GET /api/v1/problem-sets/%s/versions/%d/archive)",
        loaded.spec.id, older, latest.number, loaded.spec.id, latest.number,
    )  # fmt: skip
    return True


def _latest(session: Session, problem_set_id: int) -> ProblemSetVersion | None:
    return session.scalar(
        select(ProblemSetVersion)
        .where(ProblemSetVersion.problem_set_id == problem_set_id)
        .order_by(ProblemSetVersion.number.desc())
        .limit(1)
    )


def list_sets(session: Session, *, include_hidden: bool) -> list[tuple[ProblemSet, ProblemSetVersion]]:
    query = select(ProblemSet).order_by(ProblemSet.slug)
    if not include_hidden:
        query = query.where(ProblemSet.is_visible.is_(True))
    out = []
    for problem_set in session.scalars(query):
        latest = _latest(session, problem_set.id)
        if latest is not None:
            out.append((problem_set, latest))
    return out


def get_latest(session: Session, slug: str, *, include_hidden: bool = False) -> ProblemSetVersion:
    problem_set = session.scalar(select(ProblemSet).where(ProblemSet.slug == slug))
    if problem_set is None or (not problem_set.is_visible and not include_hidden):
        raise NotFound(f"unknown problem set {slug!r}", field="problem_set")
    latest = _latest(session, problem_set.id)
    if latest is None:
        raise NotFound(f"problem set {slug!r} has no version", field="problem_set")
    return latest


def loaded_version(settings: Settings, version: ProblemSetVersion) -> LoadedSet:
    # The archive column is deferred: it is read from the database only when the worker's folder needs rebuilding.
    return load_version(settings.data_dir, version.content_hash, lambda: version.archive)


def student_view(
    version: ProblemSetVersion,
    loaded: LoadedSet,
    due_at: datetime | None = None,
    variants: dict[str, Variant] | None = None,
) -> dict[str, Any]:
    """What a student may see: prompts, part ids and kinds, points. Never answers, checks, solutions or mutants.

    ``due_at``: the viewer's due date (their assignment's, with their override); default the set's own.
    ``variants``: problem id -> the viewer's variant of each parameterised problem (app.problemsets.variants).
    """
    spec = loaded.spec
    due_at = due_at or spec.due_at
    points = version.validation_report.get("points", {})
    return {
        "id": spec.id,
        "title": spec.title,
        "description": spec.description,
        "version": version.number,
        "due_at": due_at.isoformat() if due_at else None,
        "problems": [problem_view(p, loaded, points.get(p.id), (variants or {}).get(p.id)) for p in spec.problems],
    }


def spec_of(version: ProblemSetVersion) -> ProblemSetSpec:
    """The stored spec as the model (for due dates and policies; no files needed)."""
    return ProblemSetSpec.model_validate(version.spec)
