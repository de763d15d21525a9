"""Unpacking uploaded archives, at unit level: every hostile archive is refused with a message that names the problem.

The HTTP tests (tests/app/test_problemset_upload.py) show that a refusal becomes a 422; these show each rule of
graders/problemset/archive.py on its own, for zip and tar alike, with limits small enough to hit cheaply.
"""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import warnings
import zipfile
from pathlib import Path

import pytest

from graders.problemset import archive
from graders.problemset.archive import ArchiveLimits, pack_files, unpack_archive
from graders.problemset.errors import ProblemSetInvalid, SetError
from graders.problemset.loader import content_hash, load_problem_set, read_files
from tests.conftest import FIXTURE_SETS

SET_YAML = (FIXTURE_SETS / "basic" / "problemset.yaml").read_bytes()


def zip_of(members: list[tuple[str, bytes]], *, symlinks: tuple[str, ...] = ()) -> bytes:
    """A deflated zip of ``members`` in order; names in ``symlinks`` get the Unix mode of a symlink."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members:
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if name in symlinks:
                info.external_attr = 0o120777 << 16
            zf.writestr(info, data)
    return buf.getvalue()


def tar_member(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, linkname: str = "") -> tuple:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def tar_of(members: list[tuple], *, gz: bool = True, fmt: int = tarfile.DEFAULT_FORMAT) -> bytes:
    """A tar (gzipped unless ``gz`` is False) of ``(TarInfo, data)`` pairs in order."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=fmt) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return gzip.compress(raw.getvalue()) if gz else raw.getvalue()


def archive_of(kind: str, members: list[tuple[str, bytes]]) -> tuple[bytes, str]:
    """The same regular files as a zip or a .tar.gz, with a matching file name."""
    if kind == "zip":
        return zip_of(members), "set.zip"
    return tar_of([tar_member(name, data) for name, data in members]), "set.tar.gz"


def refusal(dest: Path, data: bytes, filename: str, limits: ArchiveLimits | None = None) -> SetError:
    """The one error an archive is refused with."""
    with pytest.raises(ProblemSetInvalid) as info:
        unpack_archive(data, filename, dest, limits or ArchiveLimits())
    assert len(info.value.errors) == 1, info.value.errors
    return info.value.errors[0]


def written(dest: Path) -> list[Path]:
    return sorted(dest.rglob("*")) if dest.exists() else []


@pytest.fixture
def no_tarfile(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if tarfile is asked to parse anything (build archives before requesting this fixture)."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tarfile parsed an archive that should have been refused before")

    monkeypatch.setattr(archive.tarfile, "open", refuse)


# --- names -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["zip", "tar"])
@pytest.mark.parametrize("name", ["../x", "sub/../../x", "./../x"])
def test_path_traversal_is_refused(tmp_path, kind, name):
    dest = tmp_path / "out"
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML), (name, b"escaped")])
    error = refusal(dest, data, filename)
    assert error.file == name
    assert "path traversal" in error.message
    assert not (tmp_path / "x").exists() and written(dest) == []


@pytest.mark.parametrize("kind", ["zip", "tar"])
@pytest.mark.parametrize("name", ["/etc/evil", "C:/evil"])
def test_absolute_paths_are_refused(tmp_path, kind, name):
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML), (name, b"x")])
    error = refusal(tmp_path / "out", data, filename)
    assert error.file == name
    assert "absolute paths are not allowed" in error.message


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_backslashes_in_names_are_refused(tmp_path, kind):
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML), ("..\\evil", b"x")])
    error = refusal(tmp_path / "out", data, filename)
    assert error.file == "..\\evil" and "backslashes" in error.message


def test_a_traversal_that_stays_inside_is_normalised(tmp_path):
    data = zip_of([("problemset.yaml", SET_YAML), ("prompts/../prompts/t1.md", b"# t1")])
    root = unpack_archive(data, "set.zip", tmp_path / "out", ArchiveLimits())
    assert (root / "prompts" / "t1.md").read_bytes() == b"# t1"


# --- links and special members -----------------------------------------------------------------------------------


def test_a_zip_symlink_is_refused(tmp_path):
    data = zip_of([("problemset.yaml", SET_YAML), ("prompts", b"/etc")], symlinks=("prompts",))
    error = refusal(tmp_path / "out", data, "set.zip")
    assert error.file == "prompts" and "links are not allowed" in error.message
    assert written(tmp_path / "out") == []


@pytest.mark.parametrize(("kind", "target"), [(tarfile.SYMTYPE, "/etc/passwd"), (tarfile.LNKTYPE, "problemset.yaml")])
def test_tar_symlinks_and_hard_links_are_refused(tmp_path, kind, target):
    data = tar_of([tar_member("problemset.yaml", SET_YAML), tar_member("prompts/t1.md", kind=kind, linkname=target)])
    error = refusal(tmp_path / "out", data, "set.tar.gz")
    assert error.file == "prompts/t1.md" and "links are not allowed" in error.message


@pytest.mark.parametrize("kind", [tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE])
def test_tar_special_members_are_refused(tmp_path, kind):
    data = tar_of([tar_member("problemset.yaml", SET_YAML), tar_member("dev/thing", kind=kind)])
    error = refusal(tmp_path / "out", data, "set.tar.gz")
    assert error.file == "dev/thing" and "only regular files and folders" in error.message


# --- counts and sizes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_too_many_files_is_refused(tmp_path, kind):
    limits = ArchiveLimits(max_files=3)
    members = [("problemset.yaml", SET_YAML)] + [(f"prompts/p{i}.md", b"#") for i in range(3)]
    data, filename = archive_of(kind, members)
    error = refusal(tmp_path / "out", data, filename, limits)
    assert error.file == filename and "more than 3 files" in error.message


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_exactly_the_file_limit_is_accepted_and_folders_do_not_count(tmp_path, kind):
    limits = ArchiveLimits(max_files=3)
    members = [("problemset.yaml", SET_YAML), ("prompts/p0.md", b"#"), ("prompts/p1.md", b"#")]
    if kind == "zip":
        data, filename = zip_of([("prompts/", b""), ("more/", b""), *members]), "set.zip"
    else:
        folders = [tar_member("prompts", kind=tarfile.DIRTYPE), tar_member("more", kind=tarfile.DIRTYPE)]
        data, filename = tar_of([*folders, *(tar_member(n, d) for n, d in members)]), "set.tar.gz"
    root = unpack_archive(data, filename, tmp_path / "out", limits)
    assert sorted(read_files(root)) == ["problemset.yaml", "prompts/p0.md", "prompts/p1.md"]


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_an_archive_over_the_size_limit_is_refused(tmp_path, kind):
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML)])
    error = refusal(tmp_path / "out", data, filename, ArchiveLimits(max_archive_bytes=len(data) - 1))
    assert error.file == filename
    assert error.message == f"archive is {len(data)} bytes; the limit is {len(data) - 1}"
    unpack_archive(data, filename, tmp_path / "at_limit", ArchiveLimits(max_archive_bytes=len(data)))


def test_a_zip_bomb_is_refused_by_its_compression_ratio(tmp_path):
    # 4 MiB of zeros deflates ~1000:1; the size limits are out of the way, so only the ratio can refuse it.
    roomy = ArchiveLimits(max_unpacked_bytes=1 << 30, max_file_bytes=1 << 30)
    data = zip_of([("problemset.yaml", SET_YAML), ("bomb.txt", bytes(4 << 20))])
    error = refusal(tmp_path / "out", data, "bomb.zip", roomy)
    assert error.file == "bomb.zip" and "too much data (zip bomb?)" in error.message
    unpack_archive(
        data,
        "bomb.zip",
        tmp_path / "ok",
        ArchiveLimits(max_unpacked_bytes=1 << 30, max_file_bytes=1 << 30, max_ratio=10**6),
    )


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_incompressible_files_over_the_unpacked_budget_are_refused(tmp_path, kind):
    # Random bytes do not compress: the ratio stays near 1, and only the unpacked total is over its limit.
    limits = ArchiveLimits(max_unpacked_bytes=1 << 20, max_files=10)
    halves = [(f"data/{i}.bin", os.urandom(600 << 10)) for i in range(2)]
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML), *halves])
    error = refusal(tmp_path / "out", data, filename, limits)
    assert error.file == filename and "too much data" in error.message
    one, name = archive_of(kind, [("problemset.yaml", SET_YAML), halves[0]])
    unpack_archive(one, name, tmp_path / "one", limits)


@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_a_member_over_the_file_limit_is_refused_by_name(tmp_path, kind):
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML), ("big.bin", os.urandom(2000))])
    error = refusal(tmp_path / "out", data, filename, ArchiveLimits(max_file_bytes=1000))
    assert error.file == "big.bin" and error.message == "unpacks to more than 1000 bytes"


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.PAX_FORMAT], ids=["gnu_longname", "pax_path"])
def test_a_tar_long_name_header_bomb_is_refused_before_tarfile_parses_it(tmp_path, fmt, request):
    # A 4 MiB member name lives in a GNU long-name or pax header that tarfile would read whole into memory; gzipped
    # it is ~4 KB. The bounded gunzip must refuse it before tarfile sees a byte.
    data = tar_of([tar_member("a" * (4 << 20))], fmt=fmt)
    assert len(data) < 8192
    request.getfixturevalue("no_tarfile")
    error = refusal(tmp_path / "out", data, "bomb.tar.gz")
    assert error.file == "bomb.tar.gz" and "too much data (zip bomb?)" in error.message


@pytest.mark.parametrize(
    ("content", "limits"),
    [
        (bytes(4 << 20), ArchiveLimits()),  # compresses ~1000:1: over the ratio
        (os.urandom(2 << 20), ArchiveLimits(max_unpacked_bytes=1 << 20, max_files=10)),  # over the unpacked budget
    ],
    ids=["ratio", "unpacked_budget"],
)
def test_a_tar_gz_that_decompresses_past_the_budget_is_refused_before_tarfile(tmp_path, content, limits, request):
    data = tar_of([tar_member("problemset.yaml", SET_YAML), tar_member("big.bin", content)])
    request.getfixturevalue("no_tarfile")
    error = refusal(tmp_path / "out", data, "set.tar.gz", limits)
    assert error.file == "set.tar.gz" and "too much data" in error.message


# --- malformed archives and names of archives --------------------------------------------------------------------


def test_a_truncated_tar_gz_is_refused(tmp_path):
    data = tar_of([tar_member("problemset.yaml", SET_YAML)])
    error = refusal(tmp_path / "out", data[:-12], "set.tar.gz")
    assert error.file == "set.tar.gz" and "not a valid .tar.gz archive" in error.message


def test_a_broken_zip_is_refused(tmp_path):
    error = refusal(tmp_path / "out", b"PK\x03\x04" + b"\0" * 60, "set.zip")
    assert error.file == "set.zip" and "not a valid zip archive" in error.message


@pytest.mark.parametrize("filename", ["set.rar", "set.7z", "set"])
def test_an_unknown_kind_of_archive_is_refused(tmp_path, filename):
    error = refusal(tmp_path / "out", b"Rar!\x1a\x07\x00 not something we read", filename)
    assert error.file == filename and error.message == "expected a .zip or .tar.gz archive"


def test_the_content_decides_when_the_name_does_not_say(tmp_path):
    data = zip_of([("problemset.yaml", SET_YAML)])
    root = unpack_archive(data, "upload.bin", tmp_path / "out", ArchiveLimits())
    assert (root / "problemset.yaml").read_bytes() == SET_YAML


# --- clashing names ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("members", "clash"),
    [
        ([("prompts", b"a file"), ("prompts/t1.md", b"# t1")], "prompts/t1.md"),
        ([("prompts/t1.md", b"# t1"), ("prompts", b"a file")], "prompts"),
    ],
    ids=["file_then_folder", "folder_then_file"],
)
@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_a_file_and_a_folder_with_one_name_is_a_clear_error(tmp_path, kind, members, clash):
    data, filename = archive_of(kind, [("problemset.yaml", SET_YAML), *members])
    error = refusal(tmp_path / "out", data, filename)
    assert error.file == clash and error.message.startswith("cannot unpack: ")


@pytest.mark.parametrize(
    ("kind", "second"), [("zip", "prompts/t1.md"), ("zip", "./prompts/t1.md"), ("tar", "prompts/t1.md")]
)
def test_two_members_with_one_name_are_refused(tmp_path, kind, second):
    # A reviewer's unzip shows the first copy, the loader would use the last: one name must mean one file.
    members = [("problemset.yaml", SET_YAML), ("prompts/t1.md", b"# what a reviewer reads"), (second, b"# replaced")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns "Duplicate name" while writing
        data, filename = archive_of(kind, members)
    error = refusal(tmp_path / "out", data, filename)
    assert "prompts/t1.md" in error.file and "duplicate" in error.message


# --- where the set is, and a good round trip ---------------------------------------------------------------------


def test_a_single_top_folder_is_the_root(tmp_path):
    data = zip_of([("basic/problemset.yaml", SET_YAML), ("basic/prompts/t1.md", b"# t1")])
    root = unpack_archive(data, "set.zip", tmp_path / "out", ArchiveLimits())
    assert root == tmp_path / "out" / "basic"


@pytest.mark.parametrize(
    "members",
    [[("prompts/t1.md", b"# t1")], [("a/problemset.yaml", SET_YAML), ("b/problemset.yaml", SET_YAML)]],
    ids=["none", "two_top_folders"],
)
def test_an_archive_without_one_problemset_yaml_is_refused(tmp_path, members):
    error = refusal(tmp_path / "out", zip_of(members), "set.zip")
    assert error.file == "set.zip" and "no problemset.yaml at the top" in error.message


def test_pack_files_round_trips_a_set_through_unpack_archive(tmp_path):
    files = read_files(FIXTURE_SETS / "basic")
    packed = pack_files(files)
    root = unpack_archive(packed, "stored.tar.gz", tmp_path / "out", ArchiveLimits())
    assert read_files(root) == files
    assert content_hash(read_files(root)) == content_hash(files)
    assert load_problem_set(root).spec.id == "basic"


def test_pack_files_is_deterministic(tmp_path):
    files = read_files(FIXTURE_SETS / "basic")
    packed = pack_files(files)
    assert pack_files(dict(reversed(files.items()))) == packed  # insertion order does not matter
    with tarfile.open(fileobj=io.BytesIO(packed), mode="r:gz") as tf:
        members = tf.getmembers()
    assert [m.name for m in members] == sorted(files)
    assert {(m.mtime, m.uid, m.gid, m.uname, m.mode) for m in members} == {(0, 0, 0, "", 0o644)}
    changed = {**files, "prompts/t1.md": files["prompts/t1.md"] + b"\n"}
    assert pack_files(changed) != packed
