"""Where a stored version's files live on a worker: unpacked once per content hash under the data dir."""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

from graders.problemset.loader import LoadedSet, load_problem_set

_lock = threading.Lock()


def version_root(data_dir: Path, content_hash: str, archive: bytes) -> Path:
    """The unpacked folder of a version; unpacked atomically (temp dir + rename) on first use."""
    target = data_dir / "sets" / content_hash
    if target.is_dir():
        return target
    with _lock:
        if target.is_dir():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpack-"))
        try:
            # Our own archive (written by pack_files after validation), so plain extraction with the data filter.
            with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tf:
                tf.extractall(tmp, filter="data")
            tmp.rename(target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return target


@lru_cache(maxsize=64)
def _load_cached(root: str, content_hash: str) -> LoadedSet:
    return load_problem_set(Path(root))


def load_version(data_dir: Path, content_hash: str, archive: bytes) -> LoadedSet:
    root = version_root(data_dir, content_hash, archive)
    return _load_cached(str(root), content_hash)
