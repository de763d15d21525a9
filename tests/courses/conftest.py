"""Two offerings of two courses with the same set assigned in both, and every role in each.

Offering A is the default one (the app fixtures' instructor, alice and bob); offering B has its own instructor,
TA, observer and student. Each account has an API token (staff tokens carry the 'instructor' scope).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from app.courses import accounts as account_service
from app.courses import service as courses
from app.courses.models import MemberRole
from app.problemsets.models import ProblemSet
from app.users import service as users
from app.users.models import Role
from tests.app.conftest import Account, accounts, basic_set, client  # noqa: F401


@dataclass
class World:
    a: int  # offering ids
    b: int
    assignment_a: int
    assignment_b: int
    people: dict[str, Account]  # "a:instructor", "a:alice", "b:instructor", "b:ta", "b:observer", "b:student", ...


def _account(session, email: str, role: Role = Role.STUDENT, default: bool = True) -> Account:  # type: ignore[no-untyped-def]
    user, password = account_service.create_user(session, email=email, role=role, enroll_default=default)
    return Account(user.id, user.email, password, "")


@pytest.fixture
def world(sessions, accounts, basic_set) -> World:  # type: ignore[no-untyped-def]  # noqa: F811
    people = {f"a:{k}": v for k, v in accounts.items()}
    with sessions() as session:
        home = courses.home_offering(session)
        ta_a = _account(session, "ta-a@example.com", Role.STUDENT)
        obs_a = _account(session, "observer-a@example.com", Role.STUDENT)
        for acc, role in ((ta_a, MemberRole.TA), (obs_a, MemberRole.OBSERVER)):
            courses.enroll(session, offering=home, email=acc.email, role=role)
        course = courses.create_course(session, slug="other", title="Another course")
        b = courses.create_offering(session, course=course, slug="b", title="Offering B")
        problem_set = session.query(ProblemSet).filter_by(slug="basic").one()
        assignment_b = courses.assign(session, offering=b, problem_set=problem_set, published=True)
        assignment_a = courses.default_assignment(session, problem_set)
        made = {"a:ta": ta_a, "a:observer": obs_a}
        for key, role in (
            ("instructor", MemberRole.INSTRUCTOR),
            ("ta", MemberRole.TA),
            ("observer", MemberRole.OBSERVER),
            ("student", MemberRole.STUDENT),
        ):
            acc = _account(session, f"{key}-b@example.com", default=False)
            courses.enroll(session, offering=b, email=acc.email, role=role)
            made[f"b:{key}"] = acc
        session.flush()
        for key, acc in made.items():
            staff = key.split(":")[1] in ("instructor", "ta")
            _, token = account_service.create_token(
                session,
                user=users.get_user(session, acc.id),
                name="t",
                scopes=["submit", "read", "instructor"] if staff else None,
            )
            acc.token = token
        people.update(made)
        session.commit()
        return World(home.id, b.id, assignment_a.id, assignment_b.id, people)
