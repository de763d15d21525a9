"""Login/logout (session cookie for the web pages), your own account's settings, and API tokens."""

from __future__ import annotations

from fastapi import APIRouter, Request

from app.courses import accounts
from app.deps import CurrentUser, RowId, SessionDep, SessionUser
from app.error_format import error_responses
from app.errors import Unauthorized
from app.users import service
from app.users.password_checks import password_checks
from app.users.schemas import LoginRequest, TokenCreate, TokenCreated, TokenPublic, UserPublic, UserUpdate

router = APIRouter(tags=["auth"])


@router.post("/auth/login", response_model=UserPublic, responses=error_responses(401, 429))
async def login(body: LoginRequest, request: Request) -> UserPublic:
    """Check email and password; on success set the session cookie. Too many attempts get 429 with Retry-After."""
    address = request.client.host if request.client else "-"
    checks = password_checks(request)
    # The login's own lane of threads, and a turn for its hash only (app.users.password_checks).
    await checks.in_login_thread(request.app.state.limiter.login, email=body.email, address=address)
    user = await checks.log_in(
        request,
        request.app.state.session_factory,
        request.session,
        email=body.email,
        password=body.password,
        lifetime_s=request.app.state.settings.session_max_age_s,
    )
    if user is None:
        raise Unauthorized("wrong email or password")
    return UserPublic.model_validate(user)


@router.post("/auth/logout", status_code=204)
def logout(request: Request, session: SessionDep) -> None:
    """End the session, on the server too: a copy of the cookie no longer logs anyone in."""
    service.log_out(session, request.session)


@router.get("/auth/me", response_model=UserPublic)
def me(user: CurrentUser) -> UserPublic:
    """The logged-in user."""
    return UserPublic.model_validate(user)


@router.patch("/auth/me", response_model=UserPublic)
def update_me(body: UserUpdate, user: CurrentUser, session: SessionDep) -> UserPublic:
    """Change your own settings: the interface language (any of your tokens may; it changes nothing but words)."""
    changed = user
    if "locale" in body.model_fields_set:
        changed = service.set_locale(session, user_id=user.id, locale=body.locale)
    session.commit()
    return UserPublic.model_validate(changed)


@router.post("/tokens", response_model=TokenCreated, status_code=201)
def create_token(body: TokenCreate, user: SessionUser, session: SessionDep) -> TokenCreated:
    """Create an API token for CI; the token is in the response once and is stored only hashed."""
    token, plain = accounts.create_token(
        session, user=user, name=body.name, scopes=body.scopes, expires_at=body.expires_at, offering_id=body.offering
    )
    session.commit()
    return TokenCreated.model_validate({**TokenPublic.model_validate(token).model_dump(), "token": plain})


@router.get("/tokens", response_model=list[TokenPublic])
def list_tokens(user: SessionUser, session: SessionDep) -> list[TokenPublic]:
    """Your tokens (never their values)."""
    return [TokenPublic.model_validate(t) for t in service.list_tokens(session, user=user)]


@router.delete("/tokens/{token_id}", response_model=TokenPublic)
def revoke_token(token_id: RowId, user: SessionUser, session: SessionDep) -> TokenPublic:
    """Revoke one of your tokens; it stops working at once."""
    token = service.revoke_token(session, user=user, token_id=token_id)
    session.commit()
    return TokenPublic.model_validate(token)
