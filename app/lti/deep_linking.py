"""Deep linking: an instructor picks a problem set from our page inside the LMS; the LMS gets a signed
LtiDeepLinkingResponse with an LTI resource link to it, its line item and maximum score.

The link carries the set in its custom parameters, so the LMS's later launches of it land on the assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException
from pylti1p3.lineitem import LineItem
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Offering
from app.lti.keys import KeyStore
from app.lti.lineitems import TAG
from app.lti.storage import DatabaseLaunchStorage
from app.lti.tool import DL_CLAIM as DL_SETTINGS
from app.lti.tool import LaunchRefused, launch_from_cache
from app.problemsets.models import ProblemSet
from app.submissions.attempts import columns

DL_DATA = "https://purl.imsglobal.org/spec/lti-dl/claim/data"


@dataclass(frozen=True)
class DeepLinkResponse:
    return_url: str
    jwt: str


def choices(session: Session, access: Access) -> list[ProblemSet]:
    """The sets this instructor may put into an LMS course (as on our own assign form)."""
    sets = session.scalars(select(ProblemSet).where(ProblemSet.is_visible.is_(True)).order_by(ProblemSet.slug))
    return [ps for ps in sets if courses.may_assign(session, access, ps)]


def max_score(session: Session, offering: Offering, problem_set: ProblemSet) -> float:
    assignment = courses.ensure_assigned(session, offering=offering, problem_set=problem_set, published=True)
    return round(sum(c.max_score for c in columns(courses.version_of(session, assignment), [])), 6)


def respond(
    factory: sessionmaker[Session], keys: KeyStore, *, launch_id: str, problem_set: ProblemSet, score_maximum: float,
    launch_url: str,
) -> DeepLinkResponse:  # fmt: skip
    """The signed response for the deep-linking launch ``launch_id`` (kept by pylti1p3's storage at the launch)."""
    try:
        launch = launch_from_cache(factory, keys, launch_id)
        deep_link = launch.get_deep_link()
    except LtiException as exc:
        raise LaunchRefused(
            f"this deep-linking launch is over or unknown ({exc}); open the tool from the LMS again"
        ) from exc
    # One answer per launch, kept on the server: the session cookie that names the launch is signed but not
    # revocable, so a copy of it from before the answer must not get a second signed response.
    if not DatabaseLaunchStorage(factory).consume(launch_id):
        raise LaunchRefused("this deep-linking launch was answered already; open the tool from the LMS again")
    settings = launch.get_launch_data().get(DL_SETTINGS)
    return_url = return_url_of(settings if isinstance(settings, dict) else {})
    item = (
        LineItem().set_label(problem_set.title).set_score_maximum(score_maximum).set_resource_id(problem_set.slug)
        .set_tag(TAG)  # the passback finds this item in the platform's container by it (app.lti.lineitems)
    )  # fmt: skip
    resource = (
        DeepLinkResource()
        .set_url(launch_url)
        .set_title(problem_set.title)
        .set_custom_params({"problem_set": problem_set.slug})
        .set_lineitem(item)
    )
    message = deep_link.get_message_jwt([resource])
    if message.get(DL_DATA) is None:
        # pylti1p3 writes "data": null when the request had none; the spec says to echo data only if it was sent.
        message.pop(DL_DATA, None)
    return DeepLinkResponse(return_url=return_url, jwt=deep_link.encode_jwt(message))


def return_url_of(settings: Mapping[str, Any]) -> str:
    """The platform's deep_link_return_url, if it is an http(s) URL: our page posts the signed answer to it (a
    javascript: or data: URL there would run in our origin)."""
    url = str(settings.get("deep_link_return_url") or "")
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise LaunchRefused("the deep-linking launch's return URL is not an http(s) URL")
    return url
