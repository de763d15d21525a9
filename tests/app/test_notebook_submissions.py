"""Jupyter notebooks as code submissions: a notebook saved by Jupyter, one exported from Colab (with a BOM) and one
with `!pip install` and magics grade the same as the equivalent .py file through the API, the web form, `autograder
submit` and the offline `autograder grade`; what was left out is said; feedback cites cells; malformed notebooks are
refused with a message and nothing stored."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import nbformat
import pytest
import uvicorn
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli.main import app as cli
from app.config import Settings
from app.courses import course_sets
from app.errors import Invalid
from app.main import create_app
from app.submissions.models import Submission
from app.submissions.notebook import cell_of_line, left_out_notice, source_from_notebook, with_cells
from tests.app.test_code_submissions import CORRECT, code_set  # noqa: F401
from tests.app.test_source_decoding import _run_cli
from tests.conftest import FIXTURE_SETS, REPO
from tests.web.conftest import login, wait_graded

# Notebooks are read before any database work: one backend is enough for the paths that store submissions.
SQLITE_ONLY = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

# One app per module and backend (tests/conftest.py), as in test_code_submissions: both API tests grade code, and
# sharing the app spares the second its own sandbox start. The uvicorn server of the first test is a second app on
# the same settings (as before) and stops at its end; every grading is waited for (wait=60).
pytestmark = pytest.mark.shared_app

Q5_REFERENCE = (REPO / "problems" / "attention" / "solutions" / "q5" / "masked_fill.py").read_text(encoding="utf-8")


def jupyter(*cells: str, tags: dict[int, list[str]] | None = None) -> bytes:
    """A notebook in the shape Jupyter saves: kernelspec, language_info, execution counts, outputs (an image too)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.9", "mimetype": "text/x-python"}
    nb.cells.append(nbformat.v4.new_markdown_cell("# 第九章作业\n实现 `add`。"))
    for n, text in enumerate(cells):
        cell = nbformat.v4.new_code_cell(text, execution_count=n + 1)
        cell.outputs = [
            nbformat.v4.new_output("stream", name="stdout", text="ok\n"),
            nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=" * 100, "text/plain": "<Figure>"}),
        ]
        if tags and n in tags:
            cell.metadata["tags"] = tags[n]
        nb.cells.append(cell)
    return nbformat.writes(nb).encode("utf-8")


def colab(*cells: str) -> bytes:
    """A notebook in the shape Colab exports: colab metadata, an accelerator, cell ids, source as one string, a BOM."""
    raw = {
        "nbformat": 4,
        "nbformat_minor": 0,
        "metadata": {
            "colab": {"provenance": [], "gpuType": "T4"},
            "kernelspec": {"name": "python3", "display_name": "Python 3"},
            "language_info": {"name": "python"},
            "accelerator": "GPU",
        },
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {"id": f"cell{n}", "colab": {"base_uri": "https://localhost:8080/"}},
                "outputs": [{"output_type": "stream", "name": "stdout", "text": ["hi\n"]}],
                "source": text,
            }
            for n, text in enumerate(cells)
        ],
    }
    return b"\xef\xbb\xbf" + json.dumps(raw, indent=1).encode("utf-8")


WITH_MAGICS = jupyter("!pip install torch\n%time x = 1", "%%time\n" + CORRECT, "print(add(1, 2))")


def _source(data: bytes, problem: str | None = "c1", entrypoints: list[str] | None = None) -> str:
    return source_from_notebook(data, name="hw.ipynb", problem_id=problem, entrypoints=entrypoints).source


def test_code_cells_are_joined_in_order_with_cell_markers_and_no_outputs() -> None:
    source = _source(jupyter("import math", CORRECT), entrypoints=["add"])
    assert source == f"# %% cell 2\nimport math\n# %% cell 3\n{CORRECT}\n"  # cell 1 is markdown
    assert "iVBOR" not in source and "ok" not in source
    assert _source(colab("import math", CORRECT)) == f"# %% cell 1\nimport math\n# %% cell 2\n{CORRECT}\n"


def test_ipython_lines_are_left_out_keeping_lines_and_blocks() -> None:
    source = _source(WITH_MAGICS + b"", entrypoints=["add"])
    assert "pass  # left out by the grader (IPython, not Python): !pip install torch" in source
    compile(source, "hw.ipynb", "exec")  # still Python, line for line
    notice = left_out_notice(source)
    assert notice is not None and "cell 2, line 1: !pip install torch" in notice and "cell 3, line 1: %%time" in notice
    inside = _source(jupyter("for i in range(2):\n    !echo hi\n" + CORRECT))
    compile(inside, "hw.ipynb", "exec")  # an indented shell line becomes an indented pass
    assert left_out_notice(_source(jupyter(CORRECT))) is None
    assert left_out_notice(CORRECT) is None


def test_tagged_cells_are_the_only_ones_that_count() -> None:
    scratch = "this is not python ("
    source = _source(jupyter(scratch, CORRECT, "add(", tags={1: ["c1"]}), entrypoints=["add"])
    assert source == f"# %% cell 3\n{CORRECT}\n"
    with pytest.raises(Invalid, match=r"No code cell of hw\.ipynb defines add"):
        _source(jupyter(CORRECT, "x = 1", tags={1: ["c1"]}), entrypoints=["add"])


def test_feedback_cites_cells_not_lines_of_the_joined_source() -> None:
    source = _source(jupyter("import math", "def add(a, b):\n    return a + c"))
    assert cell_of_line(source, 5) == (3, 2)
    assert cell_of_line(source, 1) is None  # a marker line is no line of any cell
    assert with_cells("NameError at line 5, in add", source) == "NameError at cell 3, line 2, in add"
    assert with_cells("line 5, in add", CORRECT) == "line 5, in add"  # a .py file's feedback is unchanged


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"def add(a, b): return a + b", "is not a Jupyter notebook"),
        (b'{"cells": "nope", "nbformat": 4}', "is not a Jupyter notebook"),
        (b"[" * 100_000 + b"]" * 100_000, "is not a Jupyter notebook"),
        (b"\xff\xfe{}", "is not a Jupyter notebook"),
        (json.dumps({"nbformat": 3, "nbformat_minor": 0, "cells": [], "metadata": {}}).encode(), "format 3"),
        (
            json.dumps({"nbformat": 4, "nbformat_minor": 5, "cells": [{"cell_type": "code"}], "metadata": {}}).encode(),
            "is not a Jupyter notebook",
        ),
        (jupyter("%%bash\nls", CORRECT), "Cell 2 of hw.ipynb is %%bash, not Python"),
        (jupyter("x = 1"), "No code cell of hw.ipynb defines add"),
        (
            nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("hi")])).encode(),
            "has no code cells",
        ),
    ],
)
def test_what_is_not_a_usable_notebook_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(Invalid, match=message):
        _source(data, entrypoints=["add"])


def test_a_notebook_of_another_language_is_refused() -> None:
    nb = nbformat.reads(jupyter(CORRECT).decode(), as_version=4)
    nb.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    with pytest.raises(Invalid, match="is a R notebook; this problem takes Python"):
        _source(nbformat.writes(nb).encode())


def _post(client, account, data: bytes, name: str = "hw.ipynb"):  # type: ignore[no-untyped-def]
    return client.post(
        "/api/v1/submissions",
        params={"wait": 60},
        data={"problem_set": "codeset", "problem": "c1"},
        files={"file": (name, data, "application/x-ipynb+json")},
        headers=account.headers,
    )


@pytest.fixture
def server(settings: Settings) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    instance = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not instance.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert instance.started
    yield f"http://127.0.0.1:{port}"
    instance.should_exit = True
    thread.join(timeout=30)


@SQLITE_ONLY
def test_notebooks_grade_like_the_py_file_on_every_path(client, accounts, code_set, sessions, server, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    alice = accounts["alice"]
    for data in (jupyter(CORRECT), colab("import math", CORRECT), WITH_MAGICS):
        result = _post(client, alice, data).json()
        assert result["status"] == "graded" and result["final_score"] == 3.0, result
    raising = _post(client, alice, jupyter("import math", "def add(a, b):\n    return a + c")).json()
    cited = " ".join(check["feedback"] for check in raising["checks"])
    assert "cell 3, line 2" in cited and "line 5" not in cited, raising
    magics = _post(client, alice, WITH_MAGICS).json()
    assert "IPython lines are not graded and were left out (cell 2, line 1: !pip install torch" in magics["message"]

    token = login(client, alice)
    page = client.post(
        "/sets/codeset/problems/c1",
        data={"csrf_token": token},
        files={"file": ("hw.ipynb", colab(CORRECT), "application/x-ipynb+json")},
        follow_redirects=False,
    )
    assert page.status_code == 303, page.text
    assert 'class="score">3</span><span class="of"> / 3<' in wait_graded(
        client, int(page.headers["location"].rsplit("/", 1)[1])
    )

    file = tmp_path / "hw.ipynb"
    file.write_bytes(WITH_MAGICS)
    args = ["submit", "--set", "codeset", "--problem", "c1", str(file), "--url", server, "--token", alice.token]
    submitted = CliRunner().invoke(cli, [*args, "--wait", "60"])
    assert submitted.exit_code == 0, submitted.output
    codeset = str(FIXTURE_SETS / "codeset")
    offline = _run_cli(tmp_path, "grade", "--set", codeset, "--problem", "c1", str(file), "--json")
    assert offline.exit_code == 0, offline.output
    assert json.loads(offline.output)["score"] == 3.0

    with sessions() as session:
        stored = [s.payload["code"] for s in session.scalars(select(Submission).order_by(Submission.id))]
    assert len(stored) == 7 and all(code.startswith("# %% cell ") for code in stored)


@SQLITE_ONLY
def test_a_refused_notebook_stores_nothing_on_any_path(client, accounts, code_set, sessions, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    alice = accounts["alice"]
    no_entry = _post(client, alice, jupyter("x = 1"))
    assert no_entry.status_code == 422 and "No code cell of the notebook defines add" in no_entry.text
    garbage = _post(client, alice, b"not json")
    assert garbage.status_code == 422 and "is not a Jupyter notebook" in garbage.text
    token = login(client, alice)
    page = client.post(
        "/sets/codeset/problems/c1",
        data={"csrf_token": token},
        files={"file": ("hw.ipynb", jupyter("%%bash\nls", CORRECT), "application/x-ipynb+json")},
    )
    assert page.status_code == 422 and "is %bash, not Python" in page.text.replace("%%", "%")
    file = tmp_path / "hw.ipynb"
    file.write_bytes(jupyter("x = 1"))
    offline = _run_cli(tmp_path, "grade", "--set", str(FIXTURE_SETS / "codeset"), "--problem", "c1", str(file))
    assert offline.exit_code == 2 and "No code cell of" in offline.output
    with sessions() as session:
        assert session.scalars(select(Submission)).first() is None


# The attention set's q5 reference split over cells as a student would: imports, then the function.
Q5_IMPORTS, Q5_FUNCTION = Q5_REFERENCE.split("\n\n\ndef ", 1)
Q5_CELLS = (Q5_IMPORTS, "def " + Q5_FUNCTION)
Q5_NOTEBOOKS = {
    "jupyter.ipynb": jupyter(*Q5_CELLS),
    "colab.ipynb": colab(*Q5_CELLS),
}
Q5_MAGICS = jupyter("!pip install torch", *Q5_CELLS, "%time out = scaled_attention")
Q5_NOTE = "IPython lines are not graded and were left out (cell 2, line 1: !pip install torch; cell 5, line 1: %time"


@pytest.fixture
def attention_set(sessions) -> str:  # type: ignore[no-untyped-def]
    """The shipped attention set, loaded as `serve` loads it but without its mutant gate (minutes of grading)."""
    with sessions() as session:
        course_sets.load_dir(session, root=REPO / "problems" / "attention", grader=None)
        session.commit()
    return "attention"


def _graded_page(client, sub_id: int) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 300  # bounds a hung grading (q5 takes seconds of CPU); measures nothing
    while True:
        html = client.get(f"/submissions/{sub_id}").text
        if 'data-live="/submissions/' not in html or time.monotonic() > deadline:
            return html
        time.sleep(0.1)


def _full_marks(result: dict) -> bool:  # type: ignore[type-arg]
    return result["status"] == "graded" and result["final_score"] == result["max_score"] == 24.0


def _post_q5(client, account, name: str, data: bytes) -> dict:  # type: ignore[no-untyped-def, type-arg]
    """A multipart submission to q5, followed until graded (?wait is capped at a minute: a loaded machine)."""
    resp = client.post("/api/v1/submissions", params={"wait": 60}, data={"problem_set": "attention", "problem": "q5"},
                       files={"file": (name, data, "application/x-ipynb+json")}, headers=account.headers)  # fmt: skip
    assert resp.status_code in (200, 201, 202), resp.text
    result: dict = resp.json()  # type: ignore[type-arg]
    deadline = time.monotonic() + 300  # bounds a hung grading; measures nothing
    while result["status"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(0.2)
        result = client.get(f"/api/v1/submissions/{result['id']}", headers=account.headers).json()
    return result


@SQLITE_ONLY
@pytest.mark.slow
def test_the_q5_reference_in_jupyter_and_colab_notebooks_scores_24_on_every_path(  # type: ignore[no-untyped-def]
    client, accounts, attention_set, sessions, server, tmp_path
):
    """Each notebook through the API (multipart), the set page's file field, `autograder submit` against a running
    server and the offline `autograder grade`: 24/24, as the reference .py file scores in the gate; one with
    `!pip install` and `%time` grades the same through `submit` and `grade`, with the note naming those lines."""
    alice, bob = accounts["alice"], accounts["bob"]
    for name, data in Q5_NOTEBOOKS.items():
        api = _post_q5(client, alice, name, data)
        assert _full_marks(api) and "IPython lines" not in api["message"], (name, api)

    token = login(client, bob)
    for name, data in Q5_NOTEBOOKS.items():
        upload = {"file": (name, data, "application/x-ipynb+json")}
        page = client.post("/sets/attention/problems/q5", data={"csrf_token": token}, files=upload,
                           follow_redirects=False)  # fmt: skip
        assert page.status_code == 303, page.text
        html = _graded_page(client, int(page.headers["location"].rsplit("/", 1)[1]))
        assert 'class="score">24</span><span class="of"> / 24<' in html, (name, html[-3000:])

    for name, data in Q5_NOTEBOOKS.items():
        file = tmp_path / name
        file.write_bytes(data)
        args = ["submit", "--set", "attention", "--problem", "q5", str(file), "--url", server, "--token", bob.token]
        submitted = CliRunner().invoke(cli, [*args, "--wait", "60", "--json"])
        assert submitted.exit_code == 0, submitted.output  # 0: full marks
        assert _full_marks(json.loads(submitted.output)), submitted.output
    file = tmp_path / "magics.ipynb"  # the text output, as a student reads it: the score, then the note
    file.write_bytes(Q5_MAGICS)
    args = ["submit", "--set", "attention", "--problem", "q5", str(file), "--url", server, "--token", bob.token]
    submitted = CliRunner().invoke(cli, [*args, "--wait", "60"])
    assert submitted.exit_code == 0 and "accepted: 24.0 / 24.0" in submitted.output, submitted.output
    assert Q5_NOTE in submitted.output, submitted.output

    attention = str(REPO / "problems" / "attention")
    for name, data in {**Q5_NOTEBOOKS, "magics.ipynb": Q5_MAGICS}.items():
        file = tmp_path / name
        file.write_bytes(data)
        offline = _run_cli(tmp_path, "grade", "--set", attention, "--problem", "q5", str(file), "--json")
        assert offline.exit_code == 0, (name, offline.output)
        result = json.loads(offline.output)
        assert (result["score"], result["max_score"]) == (24, 24), (name, result)
        assert (Q5_NOTE in result["message"]) == (name == "magics.ipynb"), result["message"]

    with sessions() as session:
        stored = list(session.scalars(select(Submission).order_by(Submission.id)))
    assert len(stored) == 7 and all(s.payload["code"].startswith("# %% cell ") for s in stored)
    assert all("iVBOR" not in s.payload["code"] and "outputs" not in s.payload["code"] for s in stored)
