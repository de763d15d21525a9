"""Where a stored version's files live on a worker: unpacked once per content hash under the data dir.

The folder is checked against the content hash it is named by; a damaged one is unpacked again from the database.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import LoadedSet, load_problem_set

_lock = threading.Lock()
_cache: dict[str, LoadedSet] = {}
_CACHE_MAX = 64


def _unpack(target: Path, archive: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpack-"))
    try:
        # Our own archive (written by pack_files after validation), so plain extraction with the data filter.
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tf:
            tf.extractall(tmp, filter="data")
        try:
            tmp.rename(target)
        except OSError:
            if not target.is_dir():  # another process unpacking the same version won the race: use its folder
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_version(data_dir: Path, content_hash: str, archive: Callable[[], bytes]) -> LoadedSet:
    """The loaded set of a version. ``archive`` is called only when the folder must be (re)built."""
    target = (data_dir / "sets" / content_hash).resolve()
    cached = _cache.get(str(target))
    if cached is not None:
        return cached
    with _lock:
        loaded = _load_checked(target, content_hash)
        if loaded is None:
            shutil.rmtree(target, ignore_errors=True)
            _unpack(target, archive())
            loaded = _load_checked(target, content_hash)
            if loaded is None:
                raise RuntimeError(f"stored archive of version {content_hash[:12]} does not match its hash")
        if len(_cache) >= _CACHE_MAX:
            _cache.pop(next(iter(_cache)))
        _cache[str(target)] = loaded
        return loaded


def _load_checked(target: Path, content_hash: str) -> LoadedSet | None:
    if not target.is_dir():
        return None
    try:
        loaded = load_problem_set(target)
    except (ProblemSetInvalid, OSError):
        return None
    return loaded if loaded.content_hash == content_hash else None
