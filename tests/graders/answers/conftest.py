"""Shared helpers for the answer-grader tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graders.answers import symbolic_pool


@pytest.fixture(scope="session", autouse=True)
def _stop_symbolic_workers() -> Iterator[None]:
    """Stop the SymPy worker processes the symbolic tests start."""
    yield
    symbolic_pool.shutdown()
