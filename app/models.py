"""Imports every domain's models so that Base.metadata is complete (for Alembic and tests)."""

from app.courses.models import Assignment, AssignmentStart, Course, Membership, Offering, Override
from app.gradebook.models import RegradeBatch
from app.lti.models import (
    LtiContext,
    LtiDeployment,
    LtiLaunchState,
    LtiPassback,
    LtiPlatform,
    LtiResourceLink,
    LtiUser,
)
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.ratelimit.models import RateLimitCounter
from app.submissions.models import CheckResultRow, Grade, Submission
from app.users.models import ApiToken, Invitation, LoginSession, User
from app.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

__all__ = [
    "ApiToken",
    "Assignment",
    "AssignmentStart",
    "CheckResultRow",
    "Course",
    "Grade",
    "Invitation",
    "LoginSession",
    "LtiContext",
    "LtiDeployment",
    "LtiLaunchState",
    "LtiPassback",
    "LtiPlatform",
    "LtiResourceLink",
    "LtiUser",
    "Membership",
    "Offering",
    "Override",
    "ProblemSet",
    "ProblemSetVersion",
    "RateLimitCounter",
    "RegradeBatch",
    "Submission",
    "User",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
]
