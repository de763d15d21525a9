"""The course commands end to end on a fresh SQLite database: course, offering, roster, assignment, override."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_cli import run  # noqa: F401
from tests.conftest import FIXTURE_SETS


def test_a_course_from_the_shell(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    assert run("problems", "load", str(FIXTURE_SETS / "basic")).exit_code == 0
    made = run("courses", "create", "nlp", "--title", "NLP")
    assert made.exit_code == 0, made.output
    offering = run(
        "offerings", "create", "nlp", "2027-spring", "--title", "Spring 2027", "--time-zone", "Europe/Berlin"
    )
    assert offering.exit_code == 0, offering.output
    offering_id = offering.output.split()[1]
    listing = run("courses", "list")
    assert "nlp: NLP" in listing.output and "2027-spring" in listing.output

    roster = tmp_path / "roster.csv"
    roster.write_bytes("\ufeffemail,section\nana@example.com,S1\nben@example.com,S2\nana@example.com,S1\n".encode())
    bad = run("roster", "import", offering_id, str(roster), "--apply")
    assert bad.exit_code == 1 and "line 4" in bad.output
    roster.write_bytes("\ufeffemail,section\nana@example.com,S1\nben@example.com,S2\n".encode())
    preview = run("roster", "import", offering_id, str(roster))
    assert "2 added" in preview.output and "preview only" in preview.output
    assert "0 members" in run("courses", "list").output.split("2027-spring")[1].splitlines()[0]
    applied = run("roster", "import", offering_id, str(roster), "--apply")
    assert applied.exit_code == 0 and "applied" in applied.output

    added = run(
        "assignments",
        "add",
        offering_id,
        "basic",
        "--due",
        "2027-03-01T23:59+01:00",
        "--max-attempts",
        "3",
        "--release-answer-key",
        "after_due",
    )
    assert added.exit_code == 0, added.output
    assignment_id = added.output.split()[1].rstrip(":")
    assert run("assignments", "set", assignment_id, "--cooldown", "60").exit_code == 0
    assert "attempts 3" in run("assignments", "list", offering_id).output
    override = run("overrides", "add", assignment_id, "--email", "ana@example.com", "--due", "2027-03-03T23:59+01:00")
    assert override.exit_code == 0, override.output
    missing = run("overrides", "add", assignment_id, "--email", "nobody@example.com")
    assert missing.exit_code == 1 and "not on this offering's roster" in missing.output
    # A set without parameters is assigned with one shared variant; per student is the instructor's choice, and
    # new numbers after N attempts needs it.
    assert "variants shared" in run("assignments", "list", offering_id).output
    assert run("assignments", "set", assignment_id, "--new-variant-after", "2").exit_code == 1
    assert run("assignments", "set", assignment_id, "--variants", "each").exit_code == 2
    chosen = run("assignments", "set", assignment_id, "--variants", "per_student", "--new-variant-after", "2")
    assert chosen.exit_code == 0, chosen.output
    assert "variants per_student" in run("assignments", "list", offering_id).output
    assert run("assignments", "set", assignment_id, "--variants", "shared").exit_code == 1
    assert run("assignments", "set", assignment_id, "--time-limit", "45").exit_code == 0
    assert "timed 45 min" in run("assignments", "list", offering_id).output
    more = run("overrides", "add", assignment_id, "--email", "ben@example.com", "--time-multiplier", "1.5")
    assert more.exit_code == 0, more.output
    assert (
        run("overrides", "add", assignment_id, "--email", "ben@example.com", "--time-multiplier", "20").exit_code == 2
    )


def test_add_and_set_take_every_policy_option_and_nothing_else_reaches_the_columns() -> None:
    import inspect

    from app.cli.courses import _POLICY_COLUMNS, _policy, add_assignment, set_assignment

    options = {option for option, _ in _POLICY_COLUMNS}
    assert set(inspect.signature(add_assignment).parameters) == options | {"offering", "problem_set"}
    assert set(inspect.signature(set_assignment).parameters) == options | {"assignment"}
    given = dict.fromkeys(options) | {"due": "2027-03-01T23:59+01:00", "cooldown": 60, "offering": 3}
    policy = _policy(given)
    assert policy == {"due_at": policy["due_at"], "cooldown_s": 60} and policy["due_at"].utcoffset().seconds == 0
