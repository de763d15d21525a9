"""Outgoing mail (invitations) through the SMTP server of AUTOGRADER_SMTP_*; nothing is sent when none is set."""

from __future__ import annotations

import logging
import smtplib
import ssl
from email.message import EmailMessage

from app.config import Settings

log = logging.getLogger(__name__)


class MailFailed(Exception):
    """The SMTP server could not be reached or refused the message (the caller falls back to showing the link)."""


def configured(settings: Settings) -> bool:
    return bool(settings.smtp_host)


def send(settings: Settings, *, to: str, subject: str, body: str) -> None:
    """Send one plain-text mail; raises MailFailed with the reason. The body is never logged (it holds links)."""
    assert settings.smtp_host, "send() needs AUTOGRADER_SMTP_HOST"
    message = EmailMessage()
    # One line: a title from an LMS (an LTI course's name) may hold a newline, which no header may (a ValueError,
    # after the invitation was committed, where a header injection would be refused anyway).
    subject = " ".join(subject.split())
    message["From"], message["To"], message["Subject"] = settings.smtp_from, to, subject
    message.set_content(body)
    try:
        with smtplib.SMTP(settings.smtp_host, settings.smtp_port, timeout=settings.smtp_timeout_s) as smtp:
            if settings.smtp_starttls:
                smtp.starttls(context=ssl.create_default_context())
            if settings.smtp_user:
                password = settings.smtp_password.get_secret_value() if settings.smtp_password else ""
                smtp.login(settings.smtp_user, password)
            smtp.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        # The recipient and the reason only: the message carries a one-time link.
        log.warning("mail not sent", extra={"fields": {"to": to, "reason": type(exc).__name__}})
        raise MailFailed(f"{type(exc).__name__}: {exc}") from exc
    log.info("mail sent", extra={"fields": {"to": to, "subject": subject}})
