"""Fixtures for the attention check library tests: trusted solution/mutant files run in-process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.checklibs.attention.direct_proxy import DirectProxy, load_direct

SET_ROOT = Path(__file__).resolve().parents[3] / "problems" / "attention"


@pytest.fixture
def proxy_for() -> Callable[[str], DirectProxy]:
    """A direct proxy over problems/attention/<relative path> (a solution or mutant file)."""

    def load(relative: str) -> DirectProxy:
        return load_direct(SET_ROOT / relative)

    return load
