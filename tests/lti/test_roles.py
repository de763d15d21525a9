"""LTI roles: every row of docs/lti.md's Roles table, and launches with no course role writing nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.courses.models import MemberRole, Membership
from app.lti.roles import VOCAB, map_role
from app.users.models import User
from tests.lti.conftest import launch
from tests.lti.platform import LTI, canvas_claims

DOC = Path(__file__).resolve().parents[2] / "docs" / "lti.md"

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie.
pytestmark = pytest.mark.shared_app

_ROLE_NAMES = {"instructor": MemberRole.INSTRUCTOR, "ta": MemberRole.TA, "student": MemberRole.STUDENT,
               "observer": MemberRole.OBSERVER, "none": None}  # fmt: skip


def _rows() -> list[tuple[str, MemberRole | None]]:
    """(role URI, expected role) for every role named in the Roles table of docs/lti.md."""
    section = DOC.read_text(encoding="utf-8").split("## Roles", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or cells[1] not in _ROLE_NAMES:
            continue
        for uri in re.findall(r"`([^`]+)`", cells[0]):
            rows.append((uri.replace("…/", VOCAB), _ROLE_NAMES[cells[1]]))
    return rows


ROWS = _rows()


def test_the_docs_table_names_every_kind_of_role() -> None:
    assert len(ROWS) >= 20
    assert {role for _, role in ROWS} == {
        MemberRole.INSTRUCTOR,
        MemberRole.TA,
        MemberRole.STUDENT,
        MemberRole.OBSERVER,
        None,
    }


@pytest.mark.parametrize(("uri", "expected"), ROWS, ids=[uri.removeprefix(VOCAB) for uri, _ in ROWS])
def test_each_row_of_the_roles_table(uri: str, expected: MemberRole | None) -> None:
    assert map_role([uri]) == expected


def test_the_strongest_role_wins_and_a_ta_is_not_an_instructor() -> None:
    ta = VOCAB + "membership/Instructor#TeachingAssistant"
    assert map_role([VOCAB + "membership#Instructor", ta]) == MemberRole.TA
    assert map_role([VOCAB + "membership#Learner", VOCAB + "membership#Mentor"]) == MemberRole.STUDENT
    assert map_role([VOCAB + "institution/person#Faculty", VOCAB + "membership#Learner"]) == MemberRole.STUDENT
    assert map_role([VOCAB + "membership/Learner#NonCreditLearner"]) == MemberRole.STUDENT
    assert map_role([]) is None


@pytest.mark.parametrize(
    "roles",
    [
        [],
        [VOCAB + "institution/person#Administrator"],
        [VOCAB + "system/person#Administrator", VOCAB + "institution/person#Faculty"],
    ],
    ids=["no-role", "institution-admin", "system-and-institution"],
)
def test_a_launch_without_a_course_role_writes_nothing(roles, lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    # Before, each of these became an active student membership (a Canvas account admin included).
    claims = canvas_claims(platform, sub="admin-1", role="Learner", link="rl-9", email="admin@uni.example")
    claims[LTI + "roles"] = roles
    with sessions() as s:
        before = (
            s.scalar(select(func.count()).select_from(User)),
            s.scalar(select(func.count()).select_from(Membership)),
        )
    posted = launch(lti_client, platform, claims)
    assert posted.response.status_code == 401
    assert "no role in this course" in posted.response.text
    with sessions() as s:
        after = (
            s.scalar(select(func.count()).select_from(User)),
            s.scalar(select(func.count()).select_from(Membership)),
        )
    assert after == before
