"""Fixtures for the operations tests: the app fixtures, and the real JSON log output captured in a file."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app import logs
from tests.app.conftest import accounts, basic_set, client  # noqa: F401
from tests.courses.conftest import world  # noqa: F401

LogLines = Callable[[], list[dict[str, Any]]]


@pytest.fixture
def log_lines(tmp_path: Path) -> Iterator[LogLines]:
    """Configure logging as `serve` does (JSON to a stream) with a file as the stream; read back its lines."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    path = tmp_path / "log.jsonl"
    stream = path.open("w", encoding="utf-8")
    logs.configure("json", stream=stream)

    def read() -> list[dict[str, Any]]:
        stream.flush()
        text = path.read_text(encoding="utf-8")
        # Every line must be one JSON object: a line that is not would be a forged or broken record.
        return [json.loads(line) for line in text.splitlines()]

    read.path = path  # type: ignore[attr-defined]
    yield read
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in saved[0]:
        root.addHandler(handler)
    root.setLevel(saved[1])
    stream.close()
