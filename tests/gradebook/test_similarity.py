"""Code similarity for instructors: in a seeded class where two students hand in a near-copy of one file (renamed
variables, moved comments), that pair is on top, with the shared code marked on both sides; the set's reference
solution counts as boilerplate; the CSV has every pair; students and other users cannot reach the report."""

from __future__ import annotations

import csv
import html
import io
import json
import os
import re
import subprocess
import sys
import time

import pytest

from app.courses import accounts as account_service
from app.gradebook.similarity import Entry, marked, similar_pairs
from app.users.models import Role
from tests.app.conftest import Account
from tests.app.test_problemset_upload import upload, zip_dir
from tests.conftest import FIXTURE_SETS, REPO
from tests.web.conftest import csrf_of, login

ORIGINAL = '''\
import torch


def _as_tensor(value):
    """Numbers become tensors, so one code path adds both."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.tensor(value)


def add(a, b):
    left, right = _as_tensor(a), _as_tensor(b)
    if left.shape != right.shape:
        left, right = torch.broadcast_tensors(left, right)
    total = left + right
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return total.item()
    return total
'''
NEAR_COPY = (
    ORIGINAL.replace("left", "x").replace("right", "y").replace("total", "out").replace("_as_tensor", "_t")
    .replace('"""Numbers become tensors, so one code path adds both."""', "# tensors everywhere")
)  # fmt: skip
OWN_WORK = """\
def add(a, b):
    try:
        return a.add(b)
    except AttributeError:
        pass
    result = a
    result += b
    return result
"""
REFERENCE_LIKE = "def add(a, b):\n    return a + b\n"


def _account(sessions, key: str) -> Account:  # type: ignore[no-untyped-def]
    with sessions() as session:
        user, password = account_service.create_user(session, email=f"{key}@example.com", role=Role.STUDENT)
        _, token = account_service.create_token(session, user=user, name="test")
        session.commit()
        return Account(user.id, user.email, password, token)


def _pair_codes(pair_page: str) -> list[str]:
    """The two files of a pair page, in its order (each side's heading names its student)."""
    names = re.findall(r'<h2><a href="/submissions/\d+">([^<]+)</a>', pair_page)
    by_email = {"alice": ORIGINAL, "bob": NEAR_COPY}
    return [next(code for key, code in by_email.items() if key in name) for name in names]


def _submit(client, account, code: str) -> None:  # type: ignore[no-untyped-def]
    body = {"problem_set": "codeset", "problem": "c1", "code": code}
    resp = client.post("/api/v1/submissions", params={"wait": 60}, json=body, headers=account.headers).json()
    assert resp["status"] == "graded", resp


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_near_copy_is_on_top_with_its_shared_code_marked(client, accounts, sessions) -> None:  # type: ignore[no-untyped-def]
    assert upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "codeset")).status_code == 201
    carol, dave = _account(sessions, "carol"), _account(sessions, "dave")
    _submit(client, accounts["alice"], ORIGINAL)
    _submit(client, accounts["bob"], NEAR_COPY)
    _submit(client, carol, OWN_WORK)
    _submit(client, dave, REFERENCE_LIKE)

    token = login(client, accounts["instructor"])
    gradebook = client.get("/instructor/sets/codeset/gradebook").text
    assert "Similarity report for c1" in gradebook
    started = client.post("/instructor/sets/codeset/similarity", data={"csrf_token": token, "problem": "c1"},
                          follow_redirects=False)  # fmt: skip
    assert started.status_code == 303, started.text
    report_url = started.headers["location"]
    deadline = time.monotonic() + 120
    page = client.get(report_url)
    while page.status_code == 202 and time.monotonic() < deadline:
        time.sleep(0.2)
        page = client.get(report_url)
    assert page.status_code == 200, page.text
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td class=\"num\">(\d+)%", page.text)
    assert rows and set(rows[0][:2]) == {"alice@example.com", "bob@example.com"}, rows
    assert int(rows[0][2]) >= 80
    assert "4 students compared" in page.text
    assert all("dave@example.com" not in row[:2] for row in rows)  # the reference's own code is boilerplate

    pair = client.get(f"{report_url}/pairs/0").text
    sides = re.findall(r'<pre class="code similarity-code">(.*?)</pre>', pair, re.DOTALL)
    assert len(sides) == 2, pair
    for side, code in zip(sides, _pair_codes(pair), strict=True):
        assert html.unescape(re.sub(r"</?mark>", "", side)) == code  # the whole file, in order
        shared = html.unescape("".join(re.findall(r"<mark>(.*?)</mark>", side, re.DOTALL)))
        assert "broadcast_tensors" in shared and "isinstance" in shared, side  # the copied body is marked
        assert 0.5 * len(code) < len(shared) < len(code), side  # most of it, not all of it
    table = list(csv.DictReader(io.StringIO(client.get(f"{report_url}/csv").text)))
    assert {table[0]["email_a"], table[0]["email_b"]} == {"alice@example.com", "bob@example.com"}
    assert len(table) == len(rows)

    # A student reaches neither the report nor the form; the report is its owner's only.
    login(client, accounts["alice"])
    assert client.get(report_url).status_code in (403, 404)
    assert client.get(f"{report_url}/csv").status_code in (403, 404)
    refused = client.post("/instructor/sets/codeset/similarity", data={"csrf_token": csrf_of(client.get("/").text),
                          "problem": "c1"}, follow_redirects=False)  # fmt: skip
    assert refused.status_code in (403, 404)


def test_pairs_and_marks_without_a_server() -> None:
    entries = [Entry(1, "a", "a@x", 1, ORIGINAL), Entry(2, "b", "b@x", 2, NEAR_COPY), Entry(3, "c", "c@x", 3, OWN_WORK)]
    steps: list[tuple[int, int]] = []
    pairs = similar_pairs(entries, [REFERENCE_LIKE], progress=lambda done, total: steps.append((done, total)))
    assert (pairs[0].a.name, pairs[0].b.name) == ("a", "b") and pairs[0].score > 0.8
    assert steps[-1][0] == steps[-1][1] == 3 + 3  # three fingerprints, three comparisons
    runs = marked(ORIGINAL, pairs[0].slices_a)
    assert "".join(text for text, _ in runs) == ORIGINAL and any(m for _, m in runs)
    # The reference solution's code is boilerplate: a file that is only the reference matches nothing.
    alone = similar_pairs([Entry(1, "a", "a@x", 1, REFERENCE_LIKE), Entry(2, "b", "b@x", 2, REFERENCE_LIKE)],
                          [REFERENCE_LIKE])  # fmt: skip
    assert alone == []


_REPORT_IN_A_PROCESS = """
import json
from app.gradebook.similarity import Entry, similar_pairs
from tests.gradebook.test_similarity import NEAR_COPY, ORIGINAL, OWN_WORK, REFERENCE_LIKE
entries = [Entry(1, "a", "a@x", 1, ORIGINAL), Entry(2, "b", "b@x", 2, NEAR_COPY), Entry(3, "c", "c@x", 3, OWN_WORK),
           Entry(4, "d", "d@x", 4, OWN_WORK.replace("result", "acc") + ORIGINAL)]
print(json.dumps([[p.a.name, p.b.name, p.score, p.tokens, p.slices_a, p.slices_b]
                  for p in similar_pairs(entries, [REFERENCE_LIKE])]))
"""


def test_a_report_is_the_same_in_every_process() -> None:
    """copydetect hashes k-grams with Python's salted hash(); the report uses a stable hash, so a restarted server
    (another PYTHONHASHSEED) scores the same class the same, to the marked character."""
    outputs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run([sys.executable, "-c", _REPORT_IN_A_PROCESS], env=env, cwd=REPO, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert outputs[0] and outputs[0] == outputs[1] == outputs[2], outputs
