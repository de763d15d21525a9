"""Invitations: an invited roster member gets a one-time link that sets a password.

Mailed through a real SMTP server on 127.0.0.1 (aiosmtpd, with AUTH) when AUTOGRADER_SMTP_* is set, else shown to
the instructor on the roster page. The attacks: a reused link, an expired one, a forged token, a link opened by
someone else's session, a link whose email has an account by now, a link replaced by a newer one. The token is in
no log line and only its hash is stored.
"""

from __future__ import annotations

import asyncio
import email
import logging
import re
import threading
from collections.abc import Iterator
from datetime import timedelta
from email.message import Message
from typing import Any

import pytest
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword
from fastapi.testclient import TestClient
from pydantic import SecretStr
from sqlalchemy import select, update

from app import mail
from app.courses import accounts as account_service
from app.courses import service as courses
from app.courses.models import Membership
from app.db import utcnow
from app.main import create_app
from app.security import hash_token
from app.users.models import Invitation, Role, User
from tests.app.conftest import Account
from tests.web.conftest import csrf_of, login

SMTP_USER, SMTP_PASSWORD = "relay", "relay-password"
LINK = re.compile(r"(https?://[^\s\"<]+/invite/([A-Za-z0-9_-]+))")


class MailServer:
    """aiosmtpd's SMTP protocol on an OS-chosen port of 127.0.0.1, in its own event-loop thread."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.logins: list[str] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)
        self.port = int(self.server.sockets[0].getsockname()[1])

    async def _start(self) -> asyncio.Server:
        return await self.loop.create_server(
            lambda: SMTP(self, authenticator=self._check, auth_require_tls=False), "127.0.0.1", 0
        )

    def _check(self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            SMTP_USER.encode(),
            SMTP_PASSWORD.encode(),
        )
        if ok:
            self.logins.append(SMTP_USER)
        return AuthResult(success=ok, handled=False)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(email.message_from_bytes(envelope.original_content))
        return "250 OK"

    def close(self) -> None:
        self.server.close()
        asyncio.run_coroutine_threadsafe(self.server.wait_closed(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


@pytest.fixture
def mail_server() -> Iterator[MailServer]:
    server = MailServer()
    yield server
    server.close()


def _invited(sessions, email_address: str = "newbie@example.com") -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        offering = courses.home_offering(session)
        member = courses.enroll(session, offering=offering, email=email_address, name="New Bie")
        session.commit()
        return offering.id, member.id


def _invite_on_roster(teacher: TestClient, csrf: str, offering_id: int, member_id: int) -> str:
    resp = teacher.post(f"/offerings/{offering_id}/members/{member_id}/invite", data={"csrf_token": csrf})
    assert resp.status_code == 200, resp.text[-500:]
    return resp.text


def _set_password(http: TestClient, link_path: str, password: str) -> Any:
    page = http.get(link_path)
    assert page.status_code == 200, page.text[-400:]
    return http.post(link_path, data={"csrf_token": csrf_of(page.text), "password": password, "confirm": password})


def _logs_in(http: TestClient, email_address: str, password: str) -> bool:
    csrf = csrf_of(http.get("/login").text)
    resp = http.post("/login", data={"email": email_address, "password": password, "csrf_token": csrf},
                     follow_redirects=False)  # fmt: skip
    return resp.status_code == 303


def test_a_mailed_link_sets_the_password_once(settings, sessions, accounts, mail_server, caplog) -> None:  # type: ignore[no-untyped-def]
    caplog.set_level(logging.DEBUG)
    offering_id, member_id = _invited(sessions)
    mailing = settings.model_copy(
        update={
            "smtp_host": "127.0.0.1",
            "smtp_port": mail_server.port,
            "smtp_starttls": False,
            "smtp_user": SMTP_USER,
            "smtp_password": SecretStr(SMTP_PASSWORD),
            "smtp_from": "course@example.com",
        }
    )
    with TestClient(create_app(mailing)) as client:
        teacher = TestClient(client.app)
        csrf = login(teacher, accounts["instructor"])
        roster = teacher.get(f"/offerings/{offering_id}/roster").text
        assert f'action="/offerings/{offering_id}/members/{member_id}/invite"' in roster
        page = _invite_on_roster(teacher, csrf, offering_id, member_id)
        assert "Mailed to newbie@example.com" in page and "/invite/" not in page  # mailed, so not shown

        assert mail_server.logins == [SMTP_USER] and len(mail_server.messages) == 1
        mail = mail_server.messages[0]
        assert mail["To"] == "newbie@example.com" and mail["From"] == "course@example.com"
        body = mail.get_payload(decode=True).decode()  # type: ignore[union-attr]
        match = LINK.search(body)
        assert match, body
        link, token = match.groups()
        path = link[link.index("/invite/") :]

        newbie = TestClient(client.app)
        assert not _logs_in(newbie, "newbie@example.com", "a-fine-password")  # no account before the link
        short = newbie.post(path, data={"csrf_token": csrf_of(newbie.get(path).text), "password": "short",
                                        "confirm": "short"})  # fmt: skip
        assert short.status_code == 422 and "at least 8 characters" in short.text  # not used up by a bad try
        done = _set_password(newbie, path, "a-fine-password")
        assert done.status_code == 200 and "Your password is set" in done.text
        assert _logs_in(newbie, "newbie@example.com", "a-fine-password")
        assert newbie.get(f"/offerings/{offering_id}").status_code == 200  # the membership is active

        again = TestClient(client.app).get(path)  # reused: refused, and the password stays
        assert again.status_code == 410 and "used already" in again.text
        assert _logs_in(TestClient(client.app), "newbie@example.com", "a-fine-password")

    with sessions() as session:
        stored = session.scalars(select(Invitation.token_hash)).all()
        assert stored == [hash_token(token)] and token not in stored  # only the hash is kept
        member = session.get(Membership, member_id)
        assert member is not None and member.status == "active" and member.user_id is not None
    # Every record but the test's own tools' (httpx logs the URLs it fetches; mail.log is the SMTP server's).
    ours = [r for r in caplog.records if not r.name.startswith(("httpx", "mail.log"))]
    assert any(r.name == "app.mail" for r in ours)
    assert not [r for r in ours if token in r.getMessage() or token in str(r.__dict__)]


def test_without_smtp_the_link_is_shown_to_the_instructor(client, sessions, accounts) -> None:  # type: ignore[no-untyped-def]
    offering_id, member_id = _invited(sessions)
    teacher = TestClient(client.app)
    csrf = login(teacher, accounts["instructor"])
    page = _invite_on_roster(teacher, csrf, offering_id, member_id)
    match = LINK.search(page)
    assert match and "Pass this link on to newbie@example.com" in page
    first = match.group(1)
    # A second invitation replaces the first: the older link opens nothing.
    second = LINK.search(_invite_on_roster(teacher, csrf, offering_id, member_id))
    assert second and second.group(1) != first
    newbie = TestClient(client.app)
    old = newbie.get(first[first.index("/invite/") :])
    assert old.status_code == 410 and "not valid" in old.text
    path = second.group(1)[second.group(1).index("/invite/") :]
    assert _set_password(newbie, path, "another-password").status_code == 200
    assert _logs_in(newbie, "newbie@example.com", "another-password")
    # The API: a member who accepted cannot be invited again.
    resp = client.post(f"/api/v1/offerings/{offering_id}/members/{member_id}/invitation",
                       headers=accounts["instructor"].headers)  # fmt: skip
    assert resp.status_code == 409 and "not waiting for an invitation" in resp.json()["detail"][0]["msg"]


def test_forged_expired_and_foreign_links_are_refused(client, sessions, accounts: dict[str, Account]) -> None:  # type: ignore[no-untyped-def]
    offering_id, member_id = _invited(sessions)
    _, other_id = _invited(sessions, "second@example.com")
    url = f"/api/v1/offerings/{offering_id}/members/{member_id}/invitation"
    assert client.post(url, headers=accounts["alice"].headers).status_code == 403  # a student of the offering
    # Host header poisoning: the link is built from AUTOGRADER_PUBLIC_URL, never from the request's Host (a link
    # mailed to the student that pointed at the sender's host would hand them the token).
    resp = client.post(url, headers={**accounts["instructor"].headers, "host": "evil.example"})
    assert resp.status_code == 201, resp.text
    made = resp.json()
    assert made["mailed"] is False and made["email"] == "newbie@example.com"
    assert made["link"].startswith(client.app.state.settings.public_url.rstrip("/") + "/invite/")
    path = made["link"][made["link"].index("/invite/") :]
    token = path.rsplit("/", 1)[1]
    anon = TestClient(client.app)

    forged = anon.get("/invite/" + token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"))
    assert forged.status_code == 410 and "not valid" in forged.text
    csrf = csrf_of(anon.get("/login").text)
    assert anon.post("/invite/not-a-token", data={"csrf_token": csrf, "password": "x" * 10,
                                                  "confirm": "x" * 10}).status_code == 410  # fmt: skip

    # Someone logged in (alice) opening another person's link: refused, nothing created.
    alice = TestClient(client.app)
    alice_csrf = login(alice, accounts["alice"])
    assert alice.get(path).status_code == 403
    taken = alice.post(path, data={"csrf_token": alice_csrf, "password": "x" * 10, "confirm": "x" * 10})
    assert taken.status_code == 403 and "logged in as alice@example.com" in taken.text

    # Expired: refused even with a valid form.
    with sessions() as session:
        session.execute(update(Invitation).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.commit()
    page = anon.get(path)
    assert page.status_code == 410 and "expired" in page.text
    assert anon.post(path, data={"csrf_token": csrf, "password": "x" * 10, "confirm": "x" * 10}).status_code == 410

    # A link whose email got an account meanwhile never resets that account's password.
    second = client.post(f"/api/v1/offerings/{offering_id}/members/{other_id}/invitation",
                         headers=accounts["instructor"].headers).json()  # fmt: skip
    second_path = second["link"][second["link"].index("/invite/") :]
    with sessions() as session:
        account_service.create_user(session, email="second@example.com", role=Role.STUDENT, password="owner-password",
                          enroll_default=False)  # fmt: skip
        session.commit()
    hijack = anon.post(second_path, data={"csrf_token": csrf, "password": "y" * 10, "confirm": "y" * 10})
    assert hijack.status_code == 410 and "exists already" in hijack.text
    assert _logs_in(TestClient(client.app), "second@example.com", "owner-password")
    with sessions() as session:
        assert session.scalar(select(User).where(User.email == "newbie@example.com")) is None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_title_with_a_newline_cannot_inject_a_header(settings, mail_server) -> None:  # type: ignore[no-untyped-def]
    # An LTI course's title comes from the LMS: "Course\r\nBcc: ..." in the subject must stay one header.
    mailing = settings.model_copy(update={"smtp_host": "127.0.0.1", "smtp_port": mail_server.port,
                                          "smtp_starttls": False})  # fmt: skip
    mail.send(mailing, to="newbie@example.com", subject="Your account for ATT\r\nBcc: spy@evil.example", body="hi")
    [message] = mail_server.messages
    assert message["Bcc"] is None and message["Subject"] == "Your account for ATT Bcc: spy@evil.example"
