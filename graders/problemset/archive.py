"""Safe unpacking of uploaded problem-set archives (.zip, .tar.gz) and deterministic packing for storage.

Refused with a clear message: path traversal, absolute paths, links and other special members, archives over the
size limit, too many files, and zip bombs (members whose unpacked size or compression ratio is out of bounds; sizes
are counted while reading, never trusted from headers).
"""

from __future__ import annotations

import gzip
import io
import posixpath
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from graders.problemset.errors import ProblemSetInvalid, SetError


@dataclass(frozen=True)
class ArchiveLimits:
    max_archive_bytes: int = 20 << 20
    max_files: int = 500
    max_unpacked_bytes: int = 100 << 20
    max_file_bytes: int = 10 << 20
    max_ratio: int = 200  # unpacked / compressed, per member and overall


def _refuse(name: str, message: str) -> ProblemSetInvalid:
    return ProblemSetInvalid([SetError(file=name or "<archive>", path="", message=message)])


def _safe_member_path(name: str) -> PurePosixPath | None:
    """The member's relative path, or None for a directory entry; raises for anything unsafe."""
    if "\\" in name or "\x00" in name:
        raise _refuse(name, "member names may not contain backslashes or NUL")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise _refuse(name, "absolute paths are not allowed in an archive")
    norm = posixpath.normpath(name)
    parts = PurePosixPath(norm).parts
    if ".." in parts or norm.startswith("../"):
        raise _refuse(name, "path traversal ('..') is not allowed in an archive")
    if norm in (".", ""):
        return None
    return PurePosixPath(norm)


def unpack_archive(data: bytes, filename: str, dest: Path, limits: ArchiveLimits) -> Path:
    """Unpack an uploaded archive into ``dest`` and return the set's root (the folder holding problemset.yaml)."""
    if len(data) > limits.max_archive_bytes:
        raise _refuse(filename, f"archive is {len(data)} bytes; the limit is {limits.max_archive_bytes}")
    lower = filename.lower()
    if lower.endswith(".zip") or data[:4] == b"PK\x03\x04":
        files = _read_zip(data, filename, limits)
    elif lower.endswith((".tar.gz", ".tgz", ".tar")) or data[:2] == b"\x1f\x8b":
        files = _read_tar(data, filename, limits)
    else:
        raise _refuse(filename, "expected a .zip or .tar.gz archive")
    for rel, content in files.items():
        target = dest / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        except OSError as exc:  # e.g. both "a" and "a/b" in one archive
            raise _refuse(str(rel), f"cannot unpack: {exc.strerror or exc}") from exc
    return _find_root(dest, filename)


def _find_root(dest: Path, filename: str) -> Path:
    if (dest / "problemset.yaml").is_file():
        return dest
    # Archives made with `zip -r set.zip myset/` hold one top folder.
    candidates = [p.parent for p in dest.glob("*/problemset.yaml")]
    if len(candidates) == 1:
        return candidates[0]
    raise _refuse(filename, "no problemset.yaml at the top of the archive (or in its single top folder)")


class _Budget:
    def __init__(self, filename: str, limits: ArchiveLimits, compressed: int) -> None:
        self.filename, self.limits, self.compressed = filename, limits, max(compressed, 1)
        self.total = 0
        self.count = 0

    def add_file(self, name: str) -> None:
        self.count += 1
        if self.count > self.limits.max_files:
            raise _refuse(self.filename, f"more than {self.limits.max_files} files in the archive")

    def read(self, name: str, stream: IO[bytes]) -> bytes:
        chunks, size = [], 0
        while True:
            chunk = stream.read(64 * 1024)
            if not chunk:
                break
            size += len(chunk)
            self.total += len(chunk)
            if size > self.limits.max_file_bytes:
                raise _refuse(name, f"unpacks to more than {self.limits.max_file_bytes} bytes")
            if self.total > self.limits.max_unpacked_bytes or self.total > self.compressed * self.limits.max_ratio:
                raise _refuse(self.filename, "archive unpacks to too much data (zip bomb?)")
            chunks.append(chunk)
        return b"".join(chunks)


def _read_zip(data: bytes, filename: str, limits: ArchiveLimits) -> dict[PurePosixPath, bytes]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise _refuse(filename, f"not a valid zip archive: {exc}") from exc
    budget = _Budget(filename, limits, len(data))
    files: dict[PurePosixPath, bytes] = {}
    with zf:
        for info in zf.infolist():
            rel = _safe_member_path(info.filename)
            # Unix mode bits live in the top 16 bits of external_attr; 0o120000 is a symlink.
            if (info.external_attr >> 16) & 0o170000 == 0o120000:
                raise _refuse(info.filename, "links are not allowed in an archive")
            if rel is None or info.is_dir():
                continue
            budget.add_file(info.filename)
            _refuse_duplicate(files, rel, info.filename)
            with zf.open(info) as stream:
                files[rel] = budget.read(info.filename, stream)
    return files


def _refuse_duplicate(files: dict[PurePosixPath, bytes], rel: PurePosixPath, name: str) -> None:
    # One name must mean one file: a reviewer's unzip shows the first copy, and the loader would use the last.
    if rel in files:
        raise _refuse(name, f"duplicate member {rel.as_posix()!r}: the archive holds two files with this name")


def _gunzip_bounded(data: bytes, filename: str, limits: ArchiveLimits) -> bytes:
    """Decompress under the unpacked-size and ratio budget BEFORE tarfile sees anything: tarfile reads GNU long-name
    and pax headers whole into memory, so a small .tar.gz could otherwise make it allocate gigabytes."""
    # Headers and padding of up to max_files members come on top of the files' own bytes.
    budget = min(limits.max_unpacked_bytes, len(data) * limits.max_ratio) + 1024 * (2 * limits.max_files + 8)
    out = bytearray()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            while chunk := gz.read(1 << 16):
                out += chunk
                if len(out) > budget:
                    raise _refuse(filename, "archive unpacks to too much data (zip bomb?)")
    except (OSError, EOFError) as exc:
        raise _refuse(filename, f"not a valid .tar.gz archive: {exc}") from exc
    return bytes(out)


def _read_tar(data: bytes, filename: str, limits: ArchiveLimits) -> dict[PurePosixPath, bytes]:
    raw = _gunzip_bounded(data, filename, limits) if data[:2] == b"\x1f\x8b" else data
    try:
        tf = tarfile.open(fileobj=io.BytesIO(raw), mode="r:")  # noqa: SIM115 - closed by the `with` below
    except tarfile.TarError as exc:
        raise _refuse(filename, f"not a valid tar archive: {exc}") from exc
    # The ratio was enforced while decompressing; count the members against the unpacked-size limit only.
    budget = _Budget(filename, limits, max(len(raw), 1) * limits.max_ratio)
    files: dict[PurePosixPath, bytes] = {}
    with tf:
        while True:
            try:
                member = tf.next()
            except tarfile.TarError as exc:
                raise _refuse(filename, f"corrupt tar archive: {exc}") from exc
            if member is None:
                break
            rel = _safe_member_path(member.name)
            if member.issym() or member.islnk():
                raise _refuse(member.name, "links are not allowed in an archive")
            if member.isdir() or rel is None:
                continue
            if not member.isfile():
                raise _refuse(member.name, "only regular files and folders are allowed in an archive")
            budget.add_file(member.name)
            _refuse_duplicate(files, rel, member.name)
            stream = tf.extractfile(member)
            if stream is None:
                raise _refuse(member.name, "unreadable member")
            files[rel] = budget.read(member.name, stream)
    return files


def pack_files(files: dict[str, bytes]) -> bytes:
    """A deterministic tar.gz of ``files`` (sorted, zeroed times/owners): same content, same bytes."""
    buf = io.BytesIO()

    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz, tarfile.open(fileobj=gz, mode="w") as tf:
        for name in sorted(files):
            content = files[name]
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(content), 0, 0o644
            tf.addfile(info, io.BytesIO(content))
    return buf.getvalue()
