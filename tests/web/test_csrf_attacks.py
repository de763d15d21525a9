"""CSRF: every page that changes something takes a form whose token matches the session's (app.web.deps.checked_form).

Walked over the web router, so a form added later without the check fails here. The two exceptions are the LTI
endpoints the LMS reaches cross-site: their id_token, nonce and state cookie authenticate them (docs/lti.md)."""

from __future__ import annotations

from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from app.web.deps import checked_form
from app.web.router import router

CROSS_SITE = {"/lti/login", "/lti/launch"}
# A post that has no session to hold a CSRF token (the new window of a framed LTI launch): the browser must say it
# comes from this site (Origin and Sec-Fetch-Site) and it carries a single-use token; tests/lti/test_iframe_launch.py
# posts it from another site, with a lying Origin and a reused token, and each is refused.
ORIGIN_CHECKED = {"/lti/arrive"}
UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


def _calls(dependant: Dependant) -> set[Any]:
    out = {dependant.call}
    for sub in dependant.dependencies:
        out |= _calls(sub)
    return out


def _routes(routes: list[Any]) -> list[APIRoute]:
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        elif hasattr(route, "original_router"):  # an included router, resolved lazily by this FastAPI
            found += _routes(route.original_router.routes)
        elif hasattr(route, "routes") and not hasattr(route, "app"):
            found += _routes(route.routes)
    return found


def test_every_page_that_writes_checks_the_csrf_token() -> None:
    writes = [r for r in _routes(router.routes) if r.methods & UNSAFE]
    assert len(writes) > 25  # the walk reached the included routers
    exempt = CROSS_SITE | ORIGIN_CHECKED
    missing = sorted(r.path for r in writes if r.path not in exempt and checked_form not in _calls(r.dependant))
    assert missing == []
    assert {r.path for r in writes} >= exempt | {"/account/tokens", "/invite/{token}", "/lti/deep-link"}
