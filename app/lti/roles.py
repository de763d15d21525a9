"""LTI roles as course roles: the one table (docs/lti.md, "Roles", prints it row by row).

Only context roles (what the person is in this LMS course) give a membership. Institution and system roles say
what someone is elsewhere (a Canvas account admin, a university's faculty member): a launch that carries only
those, or no role at all (LTI Core's "no role"), gives no membership, and the launch page says so, rather than
making an unknown person a student.
"""

from __future__ import annotations

from collections.abc import Iterable

from app.courses.models import MemberRole

VOCAB = "http://purl.imsglobal.org/vocab/lis/v2/"
CONTEXT = VOCAB + "membership#"
CONTEXT_SUB = VOCAB + "membership/"  # membership/Instructor#TeachingAssistant: a sub-role of a context role

# A context role (full URI, or the short name LTI 1.3 still allows for context roles) -> our role.
CONTEXT_ROLES: dict[str, MemberRole] = {
    "Instructor": MemberRole.INSTRUCTOR,
    "Administrator": MemberRole.INSTRUCTOR,  # the course's administrator
    "ContentDeveloper": MemberRole.INSTRUCTOR,
    "TeachingAssistant": MemberRole.TA,
    "Learner": MemberRole.STUDENT,
    "Student": MemberRole.STUDENT,  # LTI 1.1's short name
    "Member": MemberRole.STUDENT,
    "Mentor": MemberRole.OBSERVER,
    "Manager": MemberRole.OBSERVER,  # manages the course's place in the LMS, not its teaching
}  # any other context role (Officer) gives nothing here
# When someone has several roles, the strongest wins; a TA sub-role of Instructor is a TA, not an instructor.
_PRECEDENCE = [MemberRole.TA, MemberRole.INSTRUCTOR, MemberRole.STUDENT, MemberRole.OBSERVER]


def context_role(uri: str) -> MemberRole | None:
    """One LTI role as our course role; None for institution and system roles and for unknown ones."""
    if uri.startswith(CONTEXT):
        name = uri.removeprefix(CONTEXT)
    elif uri.startswith(CONTEXT_SUB):
        name = uri.removeprefix(CONTEXT_SUB)
    elif "/" in uri:
        return None  # institution/person#..., system/person#..., or another vocabulary
    else:
        name = uri
    if "#" in name:
        # A sub-role (membership/Instructor#TeachingAssistant; some platforms write membership#Instructor#...) is
        # its own row when we know it, else it counts as its parent.
        parent, _, sub = name.partition("#")
        name = sub if sub in CONTEXT_ROLES else parent
    return CONTEXT_ROLES.get(name)


def map_role(roles: Iterable[str]) -> MemberRole | None:
    """The course role of a launch or a roster member: the strongest context role, None when there is none."""
    found = {role for role in (context_role(r) for r in roles) if role is not None}
    return next((role for role in _PRECEDENCE if role in found), None)
