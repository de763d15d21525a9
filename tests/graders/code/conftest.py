from __future__ import annotations

from collections.abc import Iterator

import pytest

from graders.code.runner import CodeGrader
from tests.sandbox import support


@pytest.fixture(scope="module")
def code_grader() -> Iterator[CodeGrader]:
    support.require_jail()
    with CodeGrader(support.jail_config()) as g:
        yield g
