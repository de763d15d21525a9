"""Setting a course up on the pages (issue 25, item 4): an instructor creates a course (unless the setting is off),
an assigned or uploaded set stays a draft that no student path reaches until it is published with its dates, the
time zone comes from the IANA list and a refused form keeps what was typed, each page shows its dates in one zone,
and the last instructor of an offering cannot be dropped or demoted."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.courses import service as courses
from app.courses.models import Assignment, MemberRole, Membership, Offering
from app.problemsets.models import ProblemSet
from tests.conftest import FIXTURE_SETS
from tests.courses.conftest import World
from tests.web.conftest import csrf_of, login

ANSWERS = {"b1": "Encoder", "b2": "32"}


def _browser(client: TestClient) -> TestClient:
    return TestClient(client.app)


def _draft_offering(sessions, world: World) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    """Offering C of B's course with its instructor and student, and 'basic' assigned there as a draft."""
    with sessions() as session:
        b = session.get(Offering, world.b)
        c = courses.create_offering(session, course=b.course, slug="c", title="Offering C", time_zone="Asia/Shanghai")
        for key, role in (("b:instructor", MemberRole.INSTRUCTOR), ("b:student", MemberRole.STUDENT)):
            courses.enroll(session, offering=c, email=world.people[key].email, role=role)
        draft = courses.assign(session, offering=c, problem_set=courses.problem_set_by_slug(session, "basic"),
                               published=False)  # fmt: skip
        session.commit()
        return c.id, draft.id


# --- creating courses ------------------------------------------------------------------------------------------


def test_an_instructor_creates_a_course_and_becomes_its_first_instructor(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    page = teacher.get("/courses").text
    assert "New course" in page and '<option value="Asia/Shanghai">' in page and 'name="time_zone"' in page
    made = teacher.post("/courses", data={"csrf_token": token, "slug": "nlp", "title": "NLP", "offering_slug": "2027",
                                          "time_zone": "Asia/Shanghai"}, follow_redirects=False)  # fmt: skip
    assert made.status_code == 303, made.text[-400:]
    offering_id = int(made.headers["location"].rsplit("/", 1)[1])
    with sessions() as session:
        offering = session.get(Offering, offering_id)
        assert (offering.course.slug, offering.slug, offering.time_zone) == ("nlp", "2027", "Asia/Shanghai")
        (member,) = courses.members(session, offering)
        assert (member.user_id, member.role, member.status) == (world.people["b:instructor"].id, "instructor", "active")
    assert "Upload a problem set" in teacher.get(made.headers["location"]).text  # they run it

    # The API: an instructor's course comes with a first offering they instruct (else they could not reach it).
    body = client.post("/api/v1/courses", json={"slug": "nlp2", "title": "NLP 2"},
                       headers=world.people["b:instructor"].headers)  # fmt: skip
    assert body.status_code == 201, body.text
    assert [(o["slug"], o["my_role"]) for o in body.json()["offerings"]] == [("main", "instructor")]


def test_students_tas_and_observers_create_no_course(client, world: World) -> None:  # type: ignore[no-untyped-def]
    for key in ("b:student", "b:ta", "b:observer"):
        http = _browser(client)
        token = login(http, world.people[key])
        assert "New course" not in http.get("/courses").text
        refused = http.post("/courses", data={"csrf_token": token, "slug": f"x{key[2:]}", "title": "X"})
        assert refused.status_code == 403 and "Only admins and instructors create courses here." in refused.text
        api = client.post("/api/v1/courses", json={"slug": "y", "title": "Y"}, headers=world.people[key].headers)
        assert api.status_code == 403


def test_an_admin_turns_instructor_course_creation_off(client, settings, world: World) -> None:  # type: ignore[no-untyped-def]
    client.app.state.settings = settings.model_copy(update={"instructors_create_courses": False})
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    assert "New course" not in teacher.get("/courses").text
    assert teacher.post("/courses", data={"csrf_token": token, "slug": "nlp", "title": "NLP"}).status_code == 403
    api = client.post(
        "/api/v1/courses", json={"slug": "nlp", "title": "NLP"}, headers=world.people["b:instructor"].headers
    )
    assert api.status_code == 403
    # Offerings of a course they teach are still theirs to add.
    more = teacher.post("/courses/other/offerings", data={"csrf_token": token, "offering_slug": "2028",
                                                           "offering_title": "2028", "time_zone": "UTC"},
                        follow_redirects=False)  # fmt: skip
    assert more.status_code == 303


def test_a_refused_course_form_comes_back_with_what_was_typed(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    typed = {"csrf_token": token, "slug": "nlp", "title": "Natural language", "offering_slug": "spring",
             "time_zone": "Beijing"}  # fmt: skip
    refused = teacher.post("/courses", data=typed)
    assert refused.status_code == 422
    assert "unknown time zone &#39;Beijing&#39;" in refused.text and 'role="alert"' in refused.text
    assert (
        'value="nlp"' in refused.text
        and 'value="Natural language"' in refused.text
        and 'value="spring"' in refused.text
    )
    with sessions() as session:
        assert session.scalar(select(Offering.id).where(Offering.slug == "spring")) is None  # nothing written
    # A file of the zone database that names no zone is not a zone either.
    assert teacher.post("/courses", data={**typed, "time_zone": "posixrules"}).status_code == 422
    taken = teacher.post("/courses", data={**typed, "slug": "other", "time_zone": "Europe/Berlin"})
    assert taken.status_code == 422 and "a course &#39;other&#39; already exists" in taken.text
    assert '<option value="Europe/Berlin" selected>' in taken.text  # the zone chosen stays chosen
    wrong = {"csrf_token": token, "offering_slug": "B A D", "offering_title": "Kept title", "time_zone": "UTC"}
    bad_offering = teacher.post("/courses/other/offerings", data=wrong)
    assert bad_offering.status_code == 422 and 'value="Kept title"' in bad_offering.text
    teacher.cookies.set("lang", "zh_CN")
    chinese = teacher.post("/courses", data=typed)
    assert chinese.status_code == 422 and "未知的时区" in chinese.text


# --- drafts ----------------------------------------------------------------------------------------------------


def test_a_student_reaches_a_draft_by_no_path(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    """The attack: the student knows the set and the offering (the link of another term, the API's ids) and asks
    for the draft on every student path; each answers as if it did not exist, and nothing is stored."""
    c, draft = _draft_offering(sessions, world)
    student = world.people["b:student"]
    http = _browser(client)
    token = login(http, student)
    assert f"?offering={c}" not in http.get("/").text  # no card
    assert http.get(f"/sets/basic?offering={c}").status_code == 404
    # Without ?offering= the published one opens (B): no chooser that would name the draft's offering.
    plain = http.get("/sets/basic")
    assert plain.status_code == 200 and "Offering C" not in plain.text
    preview = http.get(f"/sets/basic/problems/t1/preview?part=b2&offering={c}&text=3")
    assert preview.status_code == 404, preview.text[-300:]
    form = {"csrf_token": token, "offering": str(c), **{f"answer.{k}": v for k, v in ANSWERS.items()}}
    posted = http.post("/sets/basic/problems/t1", data=form)
    assert posted.status_code == 404, posted.text[-300:]
    assert http.get(f"/offerings/{c}").status_code == 200 and "basic" not in http.get(f"/offerings/{c}").text.lower()
    api = student.headers
    assert client.get(f"/api/v1/offerings/{c}/assignments", headers=api).json() == []
    assert client.get(f"/api/v1/assignments/{draft}", headers=api).status_code == 404
    assert all(s["offering"] != c for s in client.get("/api/v1/problem-sets", headers=api).json())
    assert client.get("/api/v1/problem-sets/basic", params={"offering": c}, headers=api).status_code == 404
    body = {"problem_set": "basic", "problem": "t1", "answers": ANSWERS, "offering": c}
    assert client.post("/api/v1/submissions", json=body, headers=api).status_code == 404
    with sessions() as session:
        from app.submissions.models import Submission

        assert session.scalar(select(Submission.id).where(Submission.assignment_id == draft)) is None


def test_assign_makes_a_draft_and_publish_shows_it_with_its_dates(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    c, _ = _draft_offering(sessions, world)
    with sessions() as session:
        session.query(Assignment).filter_by(offering_id=c).delete()
        session.commit()
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    assigned = teacher.post(f"/offerings/{c}/assignments", data={"csrf_token": token, "problem_set": "basic"},
                            follow_redirects=False)  # fmt: skip
    assert assigned.status_code == 303
    settings_url = assigned.headers["location"]
    assignment_id = int(re.search(r"/assignments/(\d+)/", settings_url).group(1))  # type: ignore[union-attr]
    page = teacher.get(settings_url).text
    assert "Students do not see this assignment until it is published." in page and ">Publish</button>" in page
    assert "draft: students do not see it" in teacher.get(f"/offerings/{c}").text
    student = _browser(client)
    login(student, world.people["b:student"])
    assert student.get(f"/sets/basic?offering={c}").status_code == 404
    form = {"csrf_token": token, "do": "publish", "max_attempts": "3", "cooldown_s": "0", "decay_per_attempt": "0",
            "counts": "best", "release_scores": "immediately", "release_feedback": "immediately",
            "release_explanation": "immediately", "release_answer_key": "after_due"}  # fmt: skip
    settings_post = f"/assignments/{assignment_id}/settings"

    # Dates that contradict each other: refused, the form back as typed, still a draft.
    bad = teacher.post(settings_post, data={**form, "open_at": "2026-12-10T09:00", "due_at": "2026-12-01T23:59"})
    assert bad.status_code == 422 and "due_at must be after open_at" in bad.text
    assert 'value="2026-12-10T09:00"' in bad.text and 'value="2026-12-01T23:59"' in bad.text
    assert '<option value="after_due" selected>' in bad.text
    assert student.get(f"/sets/basic?offering={c}").status_code == 404

    zone_now = datetime.now(UTC) + timedelta(hours=8)  # Asia/Shanghai, the offering's zone (no DST)
    opens = (zone_now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    due = (zone_now + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    done = teacher.post(settings_post, data={**form, "open_at": opens, "due_at": due})
    assert done.status_code == 200 and "Published" in done.text and "Back to draft" in done.text
    with sessions() as session:
        row = session.get(Assignment, assignment_id)
        assert row.published_at is not None and row.max_attempts == 3
        # Read in the offering's zone, stored absolute (UTC).
        assert row.due_at.strftime("%Y-%m-%dT%H:%M") == (zone_now + timedelta(days=3, hours=-8)).strftime(
            "%Y-%m-%dT%H:%M"
        )
    assert student.get(f"/sets/basic?offering={c}").status_code == 200
    api = world.people["b:student"].headers
    assert [a["published"] for a in client.get(f"/api/v1/offerings/{c}/assignments", headers=api).json()] == [True]
    body = {"problem_set": "basic", "problem": "t1", "answers": ANSWERS, "offering": c}
    assert client.post("/api/v1/submissions", json=body, headers=api).status_code == 202
    # A student has work in it now: it stays published.
    back = teacher.post(f"/assignments/{assignment_id}/unpublish", data={"csrf_token": token})
    assert back.status_code == 409 and "students have submitted to this assignment already" in back.text


def test_back_to_draft_before_anyone_submitted(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    # A TA of the offering may not (ASSIGNMENTS is the instructors').
    ta = _browser(client)
    assert (
        ta.post(
            f"/assignments/{world.assignment_b}/unpublish", data={"csrf_token": login(ta, world.people["b:ta"])}
        ).status_code
        == 403
    )
    back = teacher.post(
        f"/assignments/{world.assignment_b}/unpublish", data={"csrf_token": token}, follow_redirects=False
    )
    assert back.status_code == 303
    assert (
        client.get(f"/api/v1/assignments/{world.assignment_b}", headers=world.people["b:student"].headers).status_code
        == 404
    )
    assert "Students do not see this assignment until it is published." in teacher.get(back.headers["location"]).text


def test_the_api_publishes_and_unpublishes_a_draft(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    c, draft = _draft_offering(sessions, world)
    staff, student = world.people["b:instructor"].headers, world.people["b:student"].headers
    assert client.get(f"/api/v1/assignments/{draft}", headers=staff).json()["published"] is False
    assert client.patch(f"/api/v1/assignments/{draft}", json={"published": True}, headers=staff).status_code == 200
    assert client.get(f"/api/v1/assignments/{draft}", headers=student).json()["published"] is True
    assert (
        client.patch(f"/api/v1/assignments/{draft}", json={"published": False}, headers=staff).json()["published"]
        is False
    )
    assert client.get(f"/api/v1/assignments/{draft}", headers=student).status_code == 404
    # A student cannot publish it (404: for them there is nothing there), nor a TA (no ASSIGNMENTS right).
    assert client.patch(f"/api/v1/assignments/{draft}", json={"published": True}, headers=student).status_code == 404
    # An API client states the assignment whole: published unless it asks for a draft.
    with sessions() as session:
        session.query(Assignment).filter_by(id=draft).delete()
        session.commit()
    made = client.post(f"/api/v1/offerings/{c}/assignments", json={"problem_set": "basic", "published": False},
                       headers=staff)  # fmt: skip
    assert made.status_code == 201 and made.json()["published"] is False


def test_an_uploaded_set_is_a_draft_in_its_offering(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    root = FIXTURE_SETS / "basic"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in root.rglob("*"):
            if path.is_file():
                data = path.read_bytes()
                if path.name == "problemset.yaml":
                    data = data.replace(b"id: basic", b"id: fresh", 1)
                archive.writestr(str(path.relative_to(root)), data)
    up = client.post("/api/v1/problem-sets", files={"file": ("fresh.zip", buffer.getvalue(), "application/zip")},
                     data={"offering": str(world.b)}, headers=world.people["b:instructor"].headers)  # fmt: skip
    assert up.status_code == 201, up.text
    with sessions() as session:
        fresh = session.scalar(select(ProblemSet).where(ProblemSet.slug == "fresh"))
        row = session.scalar(select(Assignment).where(Assignment.problem_set_id == fresh.id))
        assert row.offering_id == world.b and row.published_at is None
    assert client.get("/api/v1/problem-sets/fresh", headers=world.people["b:student"].headers).status_code == 404
    assert client.get("/api/v1/problem-sets/fresh", headers=world.people["b:instructor"].headers).status_code == 200


# --- one zone per page -----------------------------------------------------------------------------------------


def test_each_page_shows_its_dates_in_one_zone_and_names_it(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        session.get(Offering, world.b).time_zone = "Asia/Shanghai"
        row = session.get(Assignment, world.assignment_b)
        row.due_at = datetime(2027, 1, 10, 15, 59, tzinfo=UTC)
        member = session.scalar(select(Membership).where(Membership.email == world.people["b:student"].email))
        extended = datetime(2027, 1, 12, tzinfo=UTC)
        courses.set_override(session, assignment=row, member=member, section=None, due_at=extended,
                             late_penalty_per_day=None, extra_attempts=0, time_multiplier=1.0, note="")  # fmt: skip
        session.commit()
    teacher = _browser(client)
    login(teacher, world.people["b:instructor"])
    teacher.cookies.set("tz", "Europe/Berlin")  # the browser's zone, as the page script reports it
    home = teacher.get(f"/offerings/{world.b}").text
    assert "dates in Europe/Berlin" in home and "2027-01-10 16:59 Europe/Berlin" in home
    assert "Asia/Shanghai" not in home
    # The settings page reads its dates in the offering's zone: every date of it is in that zone, named once.
    settings = teacher.get(f"/assignments/{world.assignment_b}/settings").text
    assert "Dates in Asia/Shanghai" in settings and "2027-01-12 08:00 Asia/Shanghai" in settings
    assert "Europe/Berlin" not in settings
    # The student's home: offerings in two zones (UTC, Asia/Shanghai) and no browser zone: one zone, UTC.
    with sessions() as session:
        courses.enroll(session, offering=courses.home_offering(session), email=world.people["b:student"].email)
        session.commit()
    student = _browser(client)
    login(student, world.people["b:student"])
    cards = student.get("/").text
    assert "dates in UTC" in cards and "Asia/Shanghai" not in cards


# --- the last instructor ---------------------------------------------------------------------------------------


def test_the_last_instructor_is_neither_dropped_nor_demoted(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["b:instructor"])
    with sessions() as session:
        mine_row = select(Membership).where(
            Membership.offering_id == world.b, Membership.user_id == world.people["b:instructor"].id
        )
        me = session.scalar(mine_row)
        mine, ta = me.id, session.scalar(select(Membership.id).where(Membership.email == "ta-b@example.com"))
    url = f"/offerings/{world.b}/members/{mine}"
    for form in ({"do": "drop", "confirm": "yes"}, {"do": "save", "role": "ta", "section": "", "confirm": "yes"}):
        refused = teacher.post(url, data={"csrf_token": token, **form})
        assert refused.status_code == 422 and "is the last instructor of this offering" in refused.text
    staff = world.people["b:instructor"].headers
    for change in ({"role": "student"}, {"status": "dropped"}):
        api = client.patch(f"/api/v1/offerings/{world.b}/members/{mine}", json=change, headers=staff)
        assert api.status_code == 409 and "last instructor" in api.json()["detail"][0]["msg"]
    # A roster file that makes the instructor a TA: refused whole, nothing written.
    data = {"csrf_token": token, "csv": "email,role\ninstructor-b@example.com,ta\n", "apply": "yes"}
    csv = teacher.post(f"/offerings/{world.b}/roster", data=data)
    assert csv.status_code == 422 and "leaves the offering without an instructor" in csv.text
    with sessions() as session:
        assert [m.id for m in courses.active_instructors(session, world.b)] == [mine]
        assert session.get(Membership, ta).status == "active"
    # With a second instructor, the first may step down.
    assert (
        client.patch(
            f"/api/v1/offerings/{world.b}/members/{ta}", json={"role": "instructor"}, headers=staff
        ).status_code
        == 200
    )
    assert (
        client.patch(f"/api/v1/offerings/{world.b}/members/{mine}", json={"role": "ta"}, headers=staff).status_code
        == 200
    )
    again = _browser(client)
    again_token = login(again, world.people["b:ta"])
    again.cookies.set("lang", "zh_CN")
    zh = again.post(
        f"/offerings/{world.b}/members/{ta}", data={"csrf_token": again_token, "do": "drop", "confirm": "yes"}
    )
    assert zh.status_code == 422 and "最后一位教师" in zh.text
    assert csrf_of(zh.text)
