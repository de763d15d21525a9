"""Deep linking: an instructor picks a problem set from our page inside the LMS; the LMS gets a signed
LtiDeepLinkingResponse with an LTI resource link to it, its line item and maximum score.

The link carries the set in its custom parameters, so the LMS's later launches of it land on the assignment.
"""

from __future__ import annotations

from dataclasses import dataclass

from pylti1p3.deep_link_resource import DeepLinkResource
from pylti1p3.exception import LtiException
from pylti1p3.lineitem import LineItem
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Offering
from app.gradebook.attempts import columns
from app.lti.adapters import CollectingCookies, DatabaseToolConf, FastApiMessageLaunch, PlainRequest, SingleUseNonces
from app.lti.keys import KeyStore
from app.lti.storage import DatabaseLaunchStorage
from app.lti.tool import LaunchRefused
from app.problemsets.models import ProblemSet


@dataclass(frozen=True)
class DeepLinkResponse:
    return_url: str
    jwt: str


def choices(session: Session, access: Access) -> list[ProblemSet]:
    """The sets this instructor may put into an LMS course (as on our own assign form)."""
    sets = session.scalars(select(ProblemSet).where(ProblemSet.is_visible.is_(True)).order_by(ProblemSet.slug))
    return [ps for ps in sets if courses.may_assign(session, access, ps)]


def max_score(session: Session, offering: Offering, problem_set: ProblemSet) -> float:
    assignment = courses.ensure_assigned(session, offering=offering, problem_set=problem_set)
    return round(sum(c.max_score for c in columns(courses.version_of(session, assignment), [])), 6)


def respond(
    factory: sessionmaker[Session], keys: KeyStore, *, launch_id: str, problem_set: ProblemSet, score_maximum: float,
    launch_url: str,
) -> DeepLinkResponse:  # fmt: skip
    """The signed response for the deep-linking launch ``launch_id`` (kept by pylti1p3's storage at the launch)."""
    request = PlainRequest(params={}, cookies={}, secure=True)
    storage = DatabaseLaunchStorage(factory)
    try:
        launch = FastApiMessageLaunch.from_cache(
            launch_id, request, DatabaseToolConf(factory, keys), session_service=SingleUseNonces(request, storage),
            cookie_service=CollectingCookies(request),
        )  # fmt: skip
        deep_link = launch.get_deep_link()
    except LtiException as exc:
        raise LaunchRefused(
            f"this deep-linking launch is over or unknown ({exc}); open the tool from the LMS again"
        ) from exc
    settings = launch.get_launch_data().get("https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings") or {}
    item = LineItem().set_label(problem_set.title).set_score_maximum(score_maximum).set_resource_id(problem_set.slug)
    resource = (
        DeepLinkResource()
        .set_url(launch_url)
        .set_title(problem_set.title)
        .set_custom_params({"problem_set": problem_set.slug})
        .set_lineitem(item)
    )
    return DeepLinkResponse(
        return_url=str(settings["deep_link_return_url"]), jwt=deep_link.get_response_jwt([resource])
    )
