"""Your account: the pages' language, the password (other sessions and the tokens end), API tokens (shown once)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.datastructures import FormData

from app.courses import accounts
from app.courses import service as courses
from app.courses.access import access_for
from app.db import utcnow
from app.deps import RowId
from app.errors import Invalid
from app.users import service as users
from app.users.models import User
from app.web.deps import CheckedForm, WebSession, WebUser
from app.web.i18n import error_text, for_request
from app.web.page_route import WebRoute
from app.web.preferences import set_language_cookie
from app.web.rendering import render

router = APIRouter(route_class=WebRoute)
# The expiry choices of the token form, in days (0: never).
EXPIRIES = (30, 90, 365, 0)


def _text(form: FormData, key: str) -> str:
    value = form.get(key)
    return value if isinstance(value, str) else ""


@router.get("/account")
def account_page(request: Request, user: WebUser) -> Response:
    """The language and password forms."""
    revoked = request.query_params.get("tokens_revoked", "")
    return render(
        request,
        "account/index.html",
        changed=request.query_params.get("changed") == "1",
        tokens_revoked=int(revoked) if revoked.isdigit() and len(revoked) < 7 else None,
        language_saved=request.query_params.get("language") == "saved",
    )


@router.post("/account/language")
def save_language(request: Request, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Store the pages' language on the account (empty: follow the browser); this browser's cookie goes along."""
    chosen = _text(form, "locale") or None
    try:
        users.set_locale(session, user_id=user.id, locale=chosen)
    except Invalid:
        session.rollback()
        # Only a forged form sends another value: the page says so in its own words, not the API's.
        message = for_request(request).gettext("Choose one of the languages listed.")
        return render(request, "account/index.html", 422, language_error=message)
    session.commit()
    response = RedirectResponse("/account?language=saved", status_code=303)
    # "Follow the browser" forgets the switcher's cookie too: otherwise that, not the browser, would decide.
    set_language_cookie(response, chosen)
    return response


@router.post("/account/password")
def change_password(request: Request, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Check the current password, set the new one: every other session of this account is logged out and its API
    tokens are revoked (unless "keep my tokens" is ticked); the page says how many."""
    # A wrong current password is a guess like a wrong login: the same limits.
    request.app.state.limiter.login(email=user.email, address=request.client.host if request.client else "-")
    new, again = _text(form, "new_password"), _text(form, "new_password_again")
    try:
        if new != again:
            raise Invalid(for_request(request).gettext("the two new passwords differ"), field="new_password_again")
        keep_tokens = _text(form, "keep_tokens") == "1"  # unchecked, or a form without the box: revoked
        done = users.change_password(
            session,
            request.session,
            user=user,
            current=_text(form, "current_password"),
            new=new,
            revoke_tokens=not keep_tokens,
        )
    except Invalid as exc:
        session.rollback()
        return render(request, "account/index.html", 422, error=error_text(request, exc), error_field=exc.field)
    session.commit()
    revoked = "" if keep_tokens else f"&tokens_revoked={done.tokens_revoked}"
    return RedirectResponse(f"/account?changed=1{revoked}", status_code=303)


def _tokens_page(request: Request, session: WebSession, user: User, status: int = 200, **extra: Any) -> Response:
    access = access_for(session, user)
    offerings = courses.my_offerings(session, access)
    return render(
        request,
        "account/tokens.html",
        status,
        tokens=users.list_tokens(session, user=user),
        offerings=offerings,
        offering_titles={o.id: f"{o.course.slug} · {o.title}" for o in offerings},
        scopes=[s for s in users.SCOPES if s not in users.STAFF_SCOPES or access.any_staff or user.is_admin],
        default_scopes=users.DEFAULT_SCOPES,
        expiries=EXPIRIES,
        now=utcnow(),
        **extra,
    )


@router.get("/account/tokens")
def tokens_page(request: Request, user: WebUser, session: WebSession) -> Response:
    """Your API tokens (never their values) and the form to create one."""
    return _tokens_page(request, session, user)


@router.post("/account/tokens")
def create_token(request: Request, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Create a token and show it on this response only (it is stored hashed; a reload does not show it again)."""
    offering, days = _text(form, "offering"), _text(form, "expires_days")
    try:
        if offering and not (offering.isdigit() and len(offering) < 10):
            raise Invalid(f"offering {offering[:20]!r} is not an offering id", field="offering")
        if days not in {str(d) for d in EXPIRIES}:
            raise Invalid(f"expiry {days[:20]!r} is not one of the choices", field="expires_days")
        token, plain = accounts.create_token(
            session,
            user=user,
            name=_text(form, "name").strip()[:100],
            scopes=[s for s in form.getlist("scopes") if isinstance(s, str)] or None,
            expires_at=utcnow() + timedelta(days=int(days)) if int(days) else None,
            offering_id=int(offering) if offering else None,
        )
    except Invalid as exc:
        session.rollback()
        return _tokens_page(request, session, user, 422, error=error_text(request, exc))
    session.commit()
    return _tokens_page(request, session, user, 201, created=token, plain=plain)


@router.post("/account/tokens/{token_id}/revoke")
def revoke_token(request: Request, token_id: RowId, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Revoke one of your tokens (anyone else's, even as an admin, is a 404 here: this page is yours)."""
    users.revoke_token(session, user=user, token_id=token_id, own_only=True)
    session.commit()
    return RedirectResponse("/account/tokens", status_code=303)
