from __future__ import annotations

from collections.abc import Iterator

import pytest

from graders.code.runner import CodeGrader
from tests.sandbox import support


@pytest.fixture(scope="module")
def grader() -> Iterator[CodeGrader]:
    """One warm jailed grader per test module (starting a zygote costs the torch import)."""
    support.require_jail()
    with CodeGrader(support.jail_config()) as g:
        yield g
