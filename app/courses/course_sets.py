"""What a course does to the sets it holds: a set folder loaded into the home offering (`autograder problems
load`, the demo course), and an alias accepted from an offering's gradebook, prepared as a new version.

They live here, not in app.problemsets, because problem sets sit below courses: a set knows nothing of offerings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.orm import Session

from app.config import Settings
from app.courses import service as courses
from app.courses.access import Access
from app.courses.permissions import Action
from app.errors import N_, Conflict
from app.problemsets import service as sets
from app.problemsets.aliases import Alias, with_alias
from app.problemsets.models import ProblemSetVersion
from graders.code.grader import CodeGraderLike
from graders.problemset.loader import load_problem_set
from graders.problemset.validate import ValidationReport
from graders.problemset.variant_gate import DEFAULT_DRAWS
from graders.problemset.variants import VariantSource


def load_dir(
    session: Session,
    *,
    root: Path,
    grader: CodeGraderLike | None,
    progress: Callable[[str], None] | None = None,
    max_grading_s: float | None = None,
    keep_newer: bool = False,
    variants: VariantSource | None = None,
    variant_draws: int = DEFAULT_DRAWS,
) -> tuple[ProblemSetVersion, ValidationReport, bool]:
    """Load a set from a folder (serve's shipped sets, `autograder problems load`); it is assigned in the default
    offering the first time, so the demo course has it.

    ``keep_newer`` (serve's start-up): a folder whose content is an older version of the set than the latest
    leaves the latest current, since that one was made later on the web (an upload, an alias accepted from the
    gradebook) and a restart must not undo it. `autograder problems load` stores what the folder holds, as asked.
    Either way, a folder that replaces a version made on the web says so in the log: that version's edits are not
    in the folder unless someone brought them back (its archive can be downloaded)."""
    loaded = load_problem_set(root)
    replaced = sets.latest_of(session, loaded.spec.id)
    if keep_newer and replaced is not None and sets.folder_is_older(session, loaded, replaced):
        return replaced, ValidationReport(), False
    out = sets.ingest(
        session, loaded=loaded, user_id=None, grader=grader, progress=progress, max_grading_s=max_grading_s,
        variants=variants, variant_draws=variant_draws,
    )  # fmt: skip
    courses.default_assignment(session, out[0].problem_set)
    if out[2]:
        sets.warn_replaced(loaded.spec.id, out[0], replaced)
    return out


@dataclass(frozen=True)
class AliasEdit:
    archive: bytes  # the new version's tar.gz, to go through the upload path
    based_on: int  # the version number it was made from (ingest refuses it if another one was stored since)
    offering_id: int  # the offering it was asked from


def prepare_alias(
    session: Session, settings: Settings, access: Access, slug: str, offering_id: int | None, alias: Alias
) -> AliasEdit:
    """The edit of ``slug``'s latest version that adds ``alias``: for staff who may upload sets into an offering
    that has the set assigned (404 for anyone else). Refused when the assignment is pinned to a version (its
    students would not see a new one) and for the reasons of ``check_alias``."""
    found = courses.resolve(session, access, slug, offering_id=offering_id, action=Action.UPLOAD)
    if found.assignment.pinned_version_id is not None:
        pinned = courses.version_of(session, found.assignment).number
        raise Conflict(
            N_("this assignment is pinned to version %(version)s of the set, so its students would not see a new "
               "one; unpin it in the assignment's settings first"),
            params={"version": pinned},
        )  # fmt: skip

    latest = sets.get_latest(session, slug, include_hidden=True)
    archive = with_alias(sets.loaded_version(settings, latest), alias, latest.validation_report)
    return AliasEdit(archive=archive, based_on=latest.number, offering_id=found.assignment.offering_id)
