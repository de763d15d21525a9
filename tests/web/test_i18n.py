"""The pages in Chinese and English, dates in the viewer's zone: the catalog, the choice of language, the filters."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po
from starlette.requests import Request

from app.courses import service as courses
from app.courses.models import Assignment
from app.courses.policy import Closed, InvalidFormat, TooManyAttempts
from app.errors import N_, Invalid
from app.problemsets.models import ProblemSet
from app.submissions.schemas import CheckPublic
from app.web import i18n
from app.web.feedback import summarize
from app.web.rendering import templates
from tests.conftest import REPO
from tests.web.conftest import csrf_of, login

ZH_PO = i18n.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "messages.po"
sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def extracted() -> set[str]:
    """Every message `make i18n` extracts (the templates and app/), with babel.cfg's options."""
    with (i18n.LOCALE_DIR / "babel.cfg").open() as f:
        method_map, options_map = parse_mapping_cfg(f)
    found = set()
    for _file, _line, message, _comments, _context in extract_from_dir(REPO, method_map, options_map):
        found.add(message[0] if isinstance(message, tuple) else message)
    return found


def test_every_page_string_is_in_the_catalog_translated_and_it_compiles() -> None:
    with ZH_PO.open("rb") as f:
        catalog = read_po(f)
    in_catalog = {m.id[0] if isinstance(m.id, tuple) else m.id for m in catalog if m.id}
    messages = extracted()
    assert "Skip to content" in messages and "%(num)d attempt" in messages  # the extraction reads templates
    assert "wrong answer" in messages  # ... and the N_-marked words in Python
    missing = sorted(messages - in_catalog)
    assert not missing, f"not in the zh_CN catalog (run `make i18n` and translate): {missing}"
    assert i18n.catalog_problems() == []


STUDENT_TEMPLATES = (
    "base",
    "index",
    "set",
    "submission",
    "history",
    "login",
    "logout",
    "error",
    "_result",
    "_language",
)
# The staff and course pages (instructor, courses, account, LMS), by their path under templates/.
STAFF_TEMPLATES = tuple(
    sorted(
        str(path.relative_to(REPO / "app/web/templates").with_suffix(""))
        for folder in ("instructor", "courses", "account", "lti")
        for path in (REPO / "app/web/templates" / folder).glob("*.html")
    )
)
# Example values in placeholders, not words to translate.
_EXAMPLES = {"ci", "nlp", "2027-spring", "https://ci.example.edu/hooks/autograder"}
_JINJA = re.compile(r"\{%-?\s*trans\b.*?\{%-?\s*endtrans\s*-?%\}|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S)
_WORDS_ATTR = re.compile(r'\b(?:aria-label|title|placeholder|alt)="([^"]*)"')


@pytest.mark.parametrize("name", STUDENT_TEMPLATES + STAFF_TEMPLATES)
def test_the_templates_have_no_english_left_outside_gettext(name: str) -> None:
    """Text and labelling attributes, once the Jinja parts and the tags are taken out, hold no English words."""
    source = _JINJA.sub("\x00", (REPO / "app/web/templates" / f"{name}.html").read_text(encoding="utf-8"))
    source = _SCRIPT.sub(" ", source)  # a script's code is no text on the page
    attributes = [
        a
        for a in _WORDS_ATTR.findall(source)
        if re.search(r"[A-Za-z]{2,}", a) and "\x00" not in a and a not in _EXAMPLES
    ]
    text = re.sub(r"&[a-z]+;", " ", re.sub(r"<[^>]*>", " ", source, flags=re.S))
    words = [w for w in re.findall(r"[A-Za-z]{2,}", text) if w != "autograder"]  # the product's name
    assert not words and not attributes, f"{name}.html: wrap in _() or {{% trans %}}: {words} {attributes}"


def test_a_catalog_with_a_broken_placeholder_does_not_compile(tmp_path: Path) -> None:
    po = tmp_path / "messages.po"
    po.write_text(
        'msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n"Plural-Forms: nplurals=1; plural=0;\\n"\n'
        '"Content-Type: text/plain; charset=utf-8\\n"\n\n'
        '#, python-format\nmsgid "due %(when)s"\nmsgstr "截止 %(whne)s"\n',
        encoding="utf-8",
    )
    with pytest.raises(i18n.CatalogError, match="whne"):
        i18n.compile_catalog(po)


@pytest.mark.parametrize(
    ("header", "chosen"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", "zh_CN"),
        ("en-US,en;q=0.9,zh-CN;q=0.8", "en"),
        ("en;q=0.5, zh-cn", "zh_CN"),  # order by quality, not position
        ("zh-TW", "zh_CN"),  # Chinese of another region: still better than English
        ("zh;q=0, en", "en"),  # q=0 means "not this"
        ("fr-FR, de", "en"),
        ("zh;q=abc, en", "en"),  # an unreadable quality counts as 0
        ("", "en"),
        ("x" * 10_000, "en"),
    ],
)
def test_accept_language(header: str, chosen: str) -> None:
    assert i18n.negotiate(header) == chosen


def test_relative_times_use_the_plural_forms_of_each_language() -> None:
    now = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    en, zh = i18n.translations("en"), i18n.translations("zh_CN")
    assert i18n.relative(now + timedelta(days=2, hours=3), now, en) == "in 2 days"
    assert i18n.relative(now + timedelta(days=1, hours=1), now, en) == "in 25 hours"
    assert i18n.relative(now + timedelta(minutes=1, seconds=5), now, en) == "in 1 minute"
    assert i18n.relative(now - timedelta(hours=1), now, en) == "1 hour ago"
    assert i18n.relative(now - timedelta(days=3), now, en) == "3 days ago"
    assert i18n.relative(now + timedelta(seconds=10), now, en) == "in less than a minute"
    assert i18n.relative(now + timedelta(days=2, hours=3), now, zh) == "2 天后"
    assert i18n.relative(now - timedelta(minutes=5), now, zh) == "5 分钟前"


def render(source: str, **context: object) -> str:
    return templates.env.from_string(source).render(**context)


def test_dates_are_shown_in_the_viewers_zone_else_the_offerings_with_the_zone_named() -> None:
    due = datetime(2026, 12, 1, 15, 59, tzinfo=UTC)
    # No zone from the browser: the offering's.
    assert render("{{ d|when(z) }}", d=due, z="Asia/Shanghai", viewer_zone=None) == "2026-12-01 23:59 Asia/Shanghai"
    # The browser's zone wins.
    shown = render("{{ d|when(z) }}", d=due, z="Asia/Shanghai", viewer_zone="Europe/Berlin")
    assert shown == "2026-12-01 16:59 Europe/Berlin"
    assert render("{{ d|when }}", d=due.isoformat(), viewer_zone=None) == "2026-12-01 15:59 UTC"
    soon = datetime.now(UTC) + timedelta(days=2, hours=5)
    assert re.fullmatch(r".* Asia/Shanghai \(in 2 days\)", render("{{ d|due(z) }}", d=soon, z="Asia/Shanghai"))
    zh = render("{{ d|due(z) }}", d=soon, z="Asia/Shanghai", locale="zh_CN")
    assert zh.endswith("(2 天后)")


def test_plurals_in_templates() -> None:
    source = '{{ ngettext("%(num)d problem", "%(num)d problems", n) }} · {{ 1|points }} · {{ 2.5|points }}'
    assert render(source, n=1) == "1 problem · 1 pt · 2.5 pts"
    assert render(source, n=3) == "3 problems · 1 pt · 2.5 pts"
    assert render(source, n=3, locale="zh_CN") == "3 道题 · 1 分 · 2.5 分"


def test_the_words_the_code_feedback_adds_and_the_script_messages_are_translated() -> None:
    fields = {"category": "code", "score": 0.0, "max_score": 1.0, "visibility": "visible", "duration_ms": 1.0}
    checks = [CheckPublic(name=n, passed=False, feedback="SyntaxError: line 1", **fields) for n in ("a", "b")]
    assert summarize(checks).headline_check == "all 2 failing checks"
    assert summarize(checks, i18n.translations("zh_CN")).headline_check == "全部 2 项未通过的检查"
    assert i18n.script_messages("zh_CN")["read as:"] == "识别为："
    assert set(i18n.script_messages("en").values()) == set(i18n.SCRIPT_MESSAGES)


def request_with(headers: dict[str, str]) -> Request:
    raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    return Request({"type": "http", "method": "GET", "path": "/", "headers": raw, "query_string": b""})


def test_refusals_are_said_in_the_viewers_language_and_zone() -> None:
    zh = request_with({"Accept-Language": "zh-CN", "Cookie": "tz=Asia/Shanghai"})
    invalid = InvalidFormat({"b1": "not a valid expression"})
    assert i18n.refusal_message(request_with({}), invalid) == "invalid format: not counted (b1: not a valid expression)"
    assert i18n.refusal_message(zh, invalid) == "格式无效，本次不计入（b1: not a valid expression）"
    used_up = TooManyAttempts("x", retry_after=None, next_attempt_at=None, problem_id="q1", max_attempts=1)
    assert i18n.refusal_message(request_with({}), used_up) == "no attempts left at q1: its 1 attempt is used"
    ready = datetime.now(UTC) + timedelta(hours=3, minutes=1)
    wait = TooManyAttempts("x", retry_after=10800, next_attempt_at=ready, problem_id="q2")
    message = i18n.refusal_message(zh, wait, zone="UTC")
    assert "Asia/Shanghai" in message and message.endswith("（3 小时后）")


def test_domain_errors_read_in_the_viewers_language_with_their_values_the_api_keeps_english() -> None:
    zh = request_with({"Accept-Language": "zh-CN", "Cookie": "tz=Asia/Shanghai"})
    due = datetime(2026, 12, 1, 15, 59, tzinfo=UTC)
    closed = Closed(N_("problem set %(set)s is closed: it was due %(when)s"), params={"set": "'attn'", "when": due})
    assert closed.message == "problem set 'attn' is closed: it was due 2026-12-01 15:59 UTC"  # the API's words
    assert i18n.error_text(zh, closed) == "题集 'attn' 已关闭：截止时间是 2026-12-01 23:59 Asia/Shanghai"
    assert i18n.error_text(request_with({}), closed) == "problem set 'attn' is closed: it was due 2026-12-01 15:59 UTC"
    # Without the browser's zone, the page's zone (the offering's) is used.
    offering_zone = i18n.error_text(request_with({"Accept-Language": "zh-CN"}), closed, zone="Europe/Berlin")
    assert offering_zone.endswith("2026-12-01 16:59 Europe/Berlin")
    # A value is filled in as given: a student's text with % in it is not read as a placeholder.
    odd = Invalid(N_("%(name)s is not a .py file or a notebook (.ipynb)."), params={"name": "100%(x)s.txt"})
    assert i18n.error_text(zh, odd) == "100%(x)s.txt 不是 .py 文件，也不是 notebook（.ipynb）。"
    assert odd.message == "100%(x)s.txt is not a .py file or a notebook (.ipynb)."
    # Fixed messages are translated; a message the catalog lacks reads as made.
    chosen = Invalid(N_("Choose a .py file or a notebook, or paste your code."))
    assert i18n.refusal_message(zh, chosen) == "请选择一个 .py 文件或 notebook，或粘贴代码。"

    assert i18n.refusal_message(zh, Invalid("something else")) == "something else"


def test_the_domain_messages_the_pages_show_are_extracted_from_app() -> None:
    """The N_-marked messages of app/'s services reach the catalog (babel.cfg reads app/, not only app/web)."""
    messages = extracted()
    for message in (
        "problem set %(set)s is closed: it was due %(when)s",  # app/submissions/service.py
        "the current password is wrong",  # app/users/service.py
        "this invitation link has expired; ask your instructor for a new one",  # app/courses/invitations.py
        "your role in this offering (%(role)s) does not allow this (%(action)s)",  # app/courses/access.py
    ):
        assert message in messages, message


@pytest.mark.parametrize(
    ("cookie", "zone"),
    [("Asia/Shanghai", "Asia/Shanghai"), ("../../../etc/passwd", None), ("Not/AZone", None), ("", None)],
)
def test_only_zone_names_the_database_knows_are_taken_from_the_cookie(cookie: str, zone: str | None) -> None:
    assert i18n.viewer_zone(request_with({"Cookie": f"tz={cookie}"})) == zone


@sqlite_only
def test_the_pages_follow_the_switcher_else_accept_language(client, accounts, basic_set) -> None:  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    english = client.get("/history")
    assert '<html lang="en">' in english.text and "Your submissions" in english.text
    chinese = client.get("/history", headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    assert '<html lang="zh-CN">' in chinese.text and "我的提交" in chinese.text and "跳到正文" in chinese.text
    # The switcher, back to this page; logged in, a form (it stores the choice: tests/web/test_language.py)
    assert 'action="/language/en"' in chinese.text and 'name="next" value="/history"' in chinese.text
    # Its link (for anyone; only a cookie) beats the browser's header, and survives to the next page.
    switched = client.get("/language/en", params={"next": "/history"}, follow_redirects=False)
    assert switched.status_code == 303 and switched.headers["location"] == "/history"
    assert "lang=en" in switched.headers["set-cookie"] and "httponly" in switched.headers["set-cookie"].lower()
    again = client.get("/", headers={"Accept-Language": "zh-CN"})
    assert '<html lang="en">' in again.text and "Problem sets" in again.text
    client.get("/language/zh_CN", follow_redirects=False)
    index = client.get("/").text
    assert "<h1>习题集</h1>" in index and re.search(r"\d+ 道题", index)
    words = re.search(r'<script type="application/json" id="script-messages">(.*?)</script>', index)
    assert words and json.loads(words.group(1))["read as:"] == "识别为："  # the page script's words, for app.js
    # The switcher is no open redirect, and an unknown language is a page, not a cookie.
    for target in ("//evil.example/", "https://evil.example/", "/\\evil.example"):
        away = client.get("/language/en", params={"next": target}, follow_redirects=False)
        assert away.headers["location"] == "/"
    unknown = client.get("/language/xx", follow_redirects=False)
    assert unknown.status_code == 404 and "set-cookie" not in unknown.headers
    # The login page, before any session, is translated too, and its switcher is plain links.
    client.cookies.clear()
    login_page = client.get("/login", params={"next": "/history"}, headers={"Accept-Language": "zh"}).text
    assert "邮箱" in login_page and 'href="/language/en?next=/login%3Fnext%3D%252Fhistory"' in login_page


@sqlite_only
def test_a_due_date_is_shown_in_the_offerings_zone_else_the_browsers_with_how_far_off(  # type: ignore[no-untyped-def]
    client, accounts, basic_set, sessions
) -> None:
    due = datetime.now(UTC) + timedelta(days=2, hours=5)
    with sessions() as session:
        courses.home_offering(session).time_zone = "Asia/Shanghai"
        problem_set = session.query(ProblemSet).filter_by(slug="basic").one()
        assignment_id = courses.default_assignment(session, problem_set).id
        session.get(Assignment, assignment_id).due_at = due
        session.commit()
    login(client, accounts["alice"])
    local = due.astimezone(ZoneInfo("Asia/Shanghai")).strftime("%Y-%m-%d %H:%M")
    # Without the page script's cookie: the offering's zone, named, and "in 2 days" beside it.
    assert f"due {local} Asia/Shanghai (in 2 days)" in client.get("/").text
    assert f"due {local} Asia/Shanghai (in 2 days)" in client.get("/sets/basic").text
    client.cookies.set("tz", "America/New_York")
    new_york = due.astimezone(ZoneInfo("America/New_York")).strftime("%Y-%m-%d %H:%M")
    assert f"due {new_york} America/New_York (in 2 days)" in client.get("/").text
    client.cookies.set("lang", "zh_CN")
    assert f"截止 {new_york} America/New_York (2 天后)" in client.get("/").text


@sqlite_only
def test_the_staff_pages_are_translated_dates_in_the_offerings_zone(  # type: ignore[no-untyped-def]
    accounts, as_instructor, sessions
) -> None:
    client, _ = as_instructor
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}
    client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers, params={"wait": 10})
    with sessions() as session:
        courses.home_offering(session).time_zone = "Asia/Shanghai"
        offering_id = courses.home_offering(session).id
        problem_set = session.query(ProblemSet).filter_by(slug="basic").one()
        courses.default_assignment(session, problem_set).due_at = datetime.now(UTC) + timedelta(days=2, hours=5)
        session.commit()
    english = client.get("/instructor/sets/basic/gradebook").text
    assert "Per-question statistics" in english and "Counted scores of 1 student by score" in english
    client.cookies.set("lang", "zh_CN")
    book = client.get("/instructor/sets/basic/gradebook").text
    assert '<html lang="zh-CN">' in book and "各题统计" in book and "成绩册" in book
    assert "1 名学生计入的得分分布" in book  # the chart's description, made in Python
    assert "Per-question statistics" not in book and "Counted scores" not in book
    assert "上传习题集" in client.get("/instructor").text
    assert "我的课程" in client.get("/courses").text
    home = client.get(f"/offerings/{offering_id}").text
    assert "日期按 Asia/Shanghai" in home and "你的角色" in home
    assert re.search(r"\d\d:\d\d Asia/Shanghai \(2 天后\)", home)  # the due date, in its zone, how far off
    assert "令牌" in client.get("/account/tokens").text
    # A staff page's date is in the offering's zone, named.
    book = client.get("/instructor/sets/basic/gradebook").text
    student = re.search(r'href="/offerings/\d+/students/(\d+)"', book)
    assert student, "the gradebook links each student's work"
    work = client.get(f"/offerings/{offering_id}/students/{student.group(1)}").text
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d Asia/Shanghai", work) and "提交时间" in work
    # A refusal made in a route is said in the viewer's language too (the instructor teaches no course "elsewhere").
    with sessions() as session:
        courses.create_course(session, slug="elsewhere", title="Elsewhere")
        session.commit()
    token = csrf_of(client.get("/courses").text)
    refused = client.post("/courses/elsewhere/offerings", data={"offering_slug": "x", "csrf_token": token})
    assert refused.status_code == 403 and "你不任教这门课程。" in refused.text


@sqlite_only
def test_a_refusal_from_the_service_reads_in_chinese_on_the_page_and_in_english_in_the_api(  # type: ignore[no-untyped-def]
    as_alice, accounts, sessions
) -> None:
    """The set is past due: the page says so in the student's language, with the due time in the offering's zone;
    the API answers the same refusal in English, in UTC."""
    client, token = as_alice
    due = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    with sessions() as session:
        courses.home_offering(session).time_zone = "Asia/Shanghai"
        problem_set = session.query(ProblemSet).filter_by(slug="basic").one()
        session.get(Assignment, courses.default_assignment(session, problem_set).id).due_at = due
        session.commit()
    client.cookies.set("lang", "zh_CN")
    page = client.post("/sets/basic/problems/t1", data={"answer.b1": "Encoder", "csrf_token": token})
    assert page.status_code == 403
    assert "题集 &#39;basic&#39; 已关闭：截止时间是 2026-03-01 20:00 Asia/Shanghai" in page.text, page.text
    api = client.post("/api/v1/submissions", headers=accounts["alice"].headers,
                      json={"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder"}})  # fmt: skip
    assert api.status_code == 403
    assert api.json()["detail"][0]["msg"] == "problem set 'basic' is closed: it was due 2026-03-01 12:00 UTC"
