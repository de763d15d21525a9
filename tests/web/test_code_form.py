"""The code problem form: a file upload and a text box; a problem without checks says it is not open yet."""

from __future__ import annotations

import pytest

from app.courses import course_sets
from tests.web.conftest import login

SET_YAML = """\
id: codeset
title: 代码题
problems:
  - id: c1
    title: Softmax
    kind: code
    prompt: prompts/c1.md
    entrypoints: [softmax]
    checks: checks/c1.py
    gradable: false
"""


@pytest.fixture
def code_set(sessions, tmp_path):  # type: ignore[no-untyped-def]
    root = tmp_path / "codeset"
    (root / "prompts").mkdir(parents=True)
    (root / "problemset.yaml").write_text(SET_YAML, encoding="utf-8")
    prompt = "实现 $\\mathrm{softmax}(x)_i = e^{x_i} / \\sum_j e^{x_j}$。"
    (root / "prompts" / "c1.md").write_text(prompt, encoding="utf-8")
    with sessions() as session:
        course_sets.load_dir(session, root=root, grader=None)
        session.commit()
    return "codeset"


def test_code_form_and_its_messages(client, accounts, code_set):  # type: ignore[no-untyped-def]
    token = login(client, accounts["alice"])
    page = client.get("/sets/codeset").text
    assert "not open for submissions yet" in page and "\\mathrm{softmax}" in page

    def post(data, files=None):  # type: ignore[no-untyped-def]
        return client.post("/sets/codeset/problems/c1", data={**data, "csrf_token": token}, files=files)

    assert "Choose a .py file or a notebook, or paste your code" in post({"code": "  "}).text
    wrong_type = post({}, files={"file": ("notes.txt", b"x = 1", "text/plain")})
    assert wrong_type.status_code == 422 and "notes.txt is not a .py file or a notebook" in wrong_type.text
    both = post({"code": "def softmax(x): ..."}, files={"file": ("a.py", b"x = 1", "text/x-python")})
    assert "not both" in both.text
    latin1 = post({}, files={"file": ("a.py", "x = 'é'".encode("latin-1"), "text/x-python")})
    assert "not UTF-8" in latin1.text
    closed = post({"code": "def softmax(x):\n    return x\n"})
    assert closed.status_code == 422 and "does not accept submissions yet" in closed.text
