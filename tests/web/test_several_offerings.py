"""A person in two offerings of the same set, on every path that acts on a set (issue 25 item 1): the upload form
chooses the offering, the math preview's address carries it, the home page's cards name course and offering, and
a multipart submission and ``autograder submit --offering`` choose it too."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from app.cli.main import app as cli
from app.courses import service as courses
from app.courses.models import MemberRole, Offering
from tests.app.test_problemset_upload import zip_dir
from tests.conftest import FIXTURE_SETS
from tests.courses.conftest import World, world  # noqa: F401
from tests.courses.test_cli_submit import server  # noqa: F401
from tests.web.conftest import csrf_of, login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _in_both(sessions, world: World, email: str, role: MemberRole = MemberRole.STUDENT) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with sessions() as session:
        courses.enroll(session, offering=session.get(Offering, world.b), email=email, role=role)
        session.commit()


def test_the_upload_form_chooses_the_offering(client, world: World, sessions) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _in_both(sessions, world, world.people["a:instructor"].email, MemberRole.INSTRUCTOR)
    login(client, world.people["a:instructor"])
    page = client.get("/instructor").text
    select = re.search(r'<select id="upload-offering" name="offering" required>(.*?)</select>', page, re.S)
    assert select, page
    assert f'<option value="{world.b}">Another course · Offering B</option>' in select.group(1)
    assert '<option value="" selected disabled>Choose an offering</option>' in select.group(1)
    # The offering in context (the address's, as its home page links it) is the one chosen.
    assert f'href="/instructor?offering={world.b}"' in client.get(f"/offerings/{world.b}").text
    chosen = client.get(f"/instructor?offering={world.b}").text
    assert f'<option value="{world.b}" selected>' in chosen and "Choose an offering" not in chosen
    archive = zip_dir(FIXTURE_SETS / "basic", prefix="basic/")
    files = {"file": ("basic.zip", archive)}
    refused = client.post("/instructor/upload", data={"csrf_token": csrf_of(page)}, files=files)
    assert refused.status_code == 422 and "Choose the offering to upload into." in refused.text
    assert 'id="upload-offering"' in refused.text
    # Not an offering of theirs: refused.
    other = client.post("/instructor/upload", data={"csrf_token": csrf_of(page), "offering": "999999"}, files=files)
    assert other.status_code == 404
    sent = client.post("/instructor/upload", data={"csrf_token": csrf_of(page), "offering": str(world.b)},
                       files=files, follow_redirects=False)  # fmt: skip
    assert sent.status_code == 303 and sent.headers["location"].startswith("/instructor/uploads/")


def test_the_preview_and_the_cards_carry_the_offering(client, world: World, sessions) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _in_both(sessions, world, "alice@example.com")
    login(client, world.people["a:alice"])
    home = client.get("/").text
    assert home.count("Another course · Offering B") == 1
    assert f'href="/sets/basic?offering={world.a}"' in home and f'href="/sets/basic?offering={world.b}"' in home
    page = client.get(f"/sets/basic?offering={world.b}").text
    urls = re.findall(r'data-preview="([^"]+)"', page)
    assert urls and all(u.endswith(f"&amp;offering={world.b}") for u in urls), urls
    preview = client.get(urls[0].replace("&amp;", "&") + "&text=32")
    assert preview.status_code == 200, preview.text


def test_multipart_and_the_cli_take_the_offering(client, server: str, world: World, sessions) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _in_both(sessions, world, "alice@example.com")
    alice = world.people["a:alice"]
    fields = {"problem_set": (None, "basic"), "problem": (None, "t1"), "answers": (None, '{"b1": "encoder"}')}
    unsure = client.post("/api/v1/submissions", files=fields, headers=alice.headers)
    assert unsure.status_code == 422, unsure.text
    sent = client.post("/api/v1/submissions", files={**fields, "offering": (None, str(world.b))}, headers=alice.headers)
    assert sent.status_code in (200, 201, 202), sent.text
    assert sent.json()["offering"] == world.b
    args = ["submit", "--set", "basic", "--problem", "t1", "--answers", '{"b1": "encoder", "b2": "32"}',
            "--url", server, "--token", alice.token, "--wait", "20", "--json"]  # fmt: skip
    runner = CliRunner()
    assert runner.invoke(cli, args).exit_code == 2  # which offering? the server's 422
    chosen = runner.invoke(cli, [*args, "--offering", str(world.b)])
    assert chosen.exit_code == 0, chosen.output
    assert f'"offering": {world.b}' in chosen.output
