"""A fresh database gets the demo course the way `serve` builds it: the first accounts, then the shipped sets."""

from __future__ import annotations

from sqlalchemy import select

from app.courses import course_sets
from app.courses.access import access_for
from app.courses.accounts import ensure_first_accounts
from app.courses.models import Course
from app.courses.service import members, visible_assignments
from app.users.models import User
from tests.conftest import REPO


def test_first_start_builds_the_attention_and_transformer_course(sessions) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        created = ensure_first_accounts(session)
        for name in ("ch9", "attention"):
            course_sets.load_dir(session, root=REPO / "problems" / name, grader=None)
        session.commit()
        assert [c[0] for c in created] == ["instructor@example.com", "student@example.com"]
        course = session.scalar(select(Course))
        assert course is not None and course.title == "Attention and Transformer"
        (offering,) = course.offerings
        assert {(m.email, m.role, m.status) for m in members(session, offering)} == {
            ("instructor@example.com", "instructor", "active"),
            ("student@example.com", "student", "active"),
        }
        student = session.scalar(select(User).where(User.email == "student@example.com"))
        assert student is not None
        seen = {a.problem_set.slug for a in visible_assignments(session, access_for(session, student))}
        assert seen == {"ch9", "attention"}
