"""Uploading sets: validated before stored, new versions on change, hostile archives refused."""

from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import func, select

from app.problemsets.models import ProblemSetVersion
from tests.conftest import FIXTURE_SETS

# One app per module and backend (tests/conftest.py): uploads are validated and stored within their request, and
# each test starts from emptied rows; a stored version's unpacked folder is named by its content hash, so one left
# by an earlier test is the same files.
pytestmark = pytest.mark.shared_app


def zip_dir(root: Path, prefix: str = "") -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                zf.write(path, prefix + path.relative_to(root).as_posix())
    return buf.getvalue()


def upload(client, account, data: bytes, name: str = "set.zip", *, publish: bool = True):  # type: ignore[no-untyped-def]
    """Upload through the API; published at once by default, since most tests then submit as a student (a new
    assignment is otherwise a draft: test_an_upload_is_a_draft_until_published)."""
    form = {"publish": "true"} if publish else {}
    return client.post("/api/v1/problem-sets", files={"file": (name, data)}, data=form, headers=account.headers)


def versions(sessions) -> int:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(ProblemSetVersion)) or 0


def test_upload_then_reupload_makes_a_new_version(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    first = upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "basic", prefix="basic/"))
    assert first.status_code == 201, first.text
    assert first.json()["version"] == 1 and first.json()["report"]["ok"]
    same = upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "basic"))
    assert same.json() | {"report": None} == first.json() | {"report": None, "created": False}
    changed = tmp_path / "basic"
    shutil.copytree(FIXTURE_SETS / "basic", changed)
    (changed / "prompts" / "t2.md").write_text("# t2, reworded\n")
    second = upload(client, accounts["instructor"], zip_dir(changed))
    assert second.json()["version"] == 2 and second.json()["created"]
    assert versions(sessions) == 2


def test_tar_gz_upload(client, accounts):  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        tf.add(FIXTURE_SETS / "basic", arcname="basic")
    assert upload(client, accounts["instructor"], buf.getvalue(), "set.tar.gz").status_code == 201


def test_invalid_set_is_422_with_every_error_and_not_stored(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURE_SETS / "basic", broken)
    text = (broken / "problemset.yaml").read_text()
    text = text.replace("answer: [B]", "answer: [Z]").replace("prompt: prompts/t3.md", "prompt: prompts/missing.md")
    (broken / "problemset.yaml").write_text(text)
    resp = upload(client, accounts["instructor"], zip_dir(broken))
    assert resp.status_code == 422
    errors = resp.json()["report"]["errors"]
    assert any("problems[1] (t2)" in e["path"] and "not among options" in e["message"] for e in errors)
    assert versions(sessions) == 0


def test_rejected_answer_case_refuses_the_set(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    broken = tmp_path / "b"
    shutil.copytree(FIXTURE_SETS / "basic", broken)
    yaml_path = broken / "problemset.yaml"
    yaml_path.write_text(yaml_path.read_text().replace("reject: [decoder]", "reject: [encoder]"))
    resp = upload(client, accounts["instructor"], zip_dir(broken))
    assert resp.status_code == 422
    assert "should be rejected" in resp.json()["report"]["errors"][0]["message"]
    assert versions(sessions) == 0


def _zip_with(name: str, data: bytes = b"x", *, symlink: bool = False) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        if symlink:
            info.external_attr = 0o120777 << 16
        zf.writestr(info, data)
        zf.writestr("problemset.yaml", (FIXTURE_SETS / "basic" / "problemset.yaml").read_bytes())
    return buf.getvalue()


@pytest.mark.parametrize(
    ("archive", "message"),
    [
        (_zip_with("../evil.py"), "path traversal"),
        (_zip_with("/etc/evil"), "absolute paths"),
        (_zip_with("link", b"/etc/passwd", symlink=True), "links"),
        (_zip_with("bomb.txt", b"\0" * (30 << 20)), "too much data"),
        (b"not an archive at all", "not a valid zip archive"),
    ],
)
def test_hostile_archives_are_refused(client, accounts, sessions, archive, message):  # type: ignore[no-untyped-def]
    resp = upload(client, accounts["instructor"], archive)
    assert resp.status_code == 422, resp.text
    assert message in str(resp.json())
    assert versions(sessions) == 0


def test_too_many_files_is_refused(client, accounts, settings):  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(settings.max_archive_files + 1):
            zf.writestr(f"f{i}.txt", b"")
    resp = upload(client, accounts["instructor"], buf.getvalue())
    assert resp.status_code == 422 and "more than" in str(resp.json())


def test_tar_symlink_is_refused(client, accounts):  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("problemset.yaml")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(info)
    resp = upload(client, accounts["instructor"], buf.getvalue(), "x.tar.gz")
    assert resp.status_code == 422 and "links" in str(resp.json())


def test_oversized_upload_is_413(client, accounts, settings):  # type: ignore[no-untyped-def]
    resp = upload(client, accounts["instructor"], b"0" * (settings.max_upload_bytes + 1))
    assert resp.status_code == 413


def test_tar_long_name_bomb_is_refused_before_parsing(client, accounts):  # type: ignore[no-untyped-def]
    # A GNU long-name header of 60 MB compresses to almost nothing; tarfile would read it whole into memory.
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tf:
        info = tarfile.TarInfo("a" * (60 << 20))
        tf.addfile(info, io.BytesIO(b""))
    import gzip

    resp = upload(client, accounts["instructor"], gzip.compress(raw.getvalue()), "bomb.tar.gz")
    assert resp.status_code == 422 and "too much data" in resp.text


def test_file_and_folder_with_one_name_is_a_clear_error(client, accounts):  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("prompts", b"a file")
        zf.writestr("prompts/t1.md", b"# t1")
    resp = upload(client, accounts["instructor"], buf.getvalue())
    assert resp.status_code == 422 and "cannot unpack" in resp.text


def test_an_upload_is_a_draft_until_published(client, accounts):  # type: ignore[no-untyped-def]
    uploaded = upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "basic"), publish=False)
    assert uploaded.status_code == 201, uploaded.text
    assert client.get("/api/v1/problem-sets/basic", headers=accounts["alice"].headers).status_code == 404
    again = upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "basic"), publish=True)  # same content
    assert again.status_code == 201 and not again.json()["created"]
    assert client.get("/api/v1/problem-sets/basic", headers=accounts["alice"].headers).status_code == 200
