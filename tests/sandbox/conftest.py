from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from graders.code.runner import CodeGrader
from tests.sandbox import support

SECRET_ENV = "AUTOGRADER_TEST_PLANTED_SECRET"


@pytest.fixture(scope="module")
def secret() -> Iterator[str]:
    """A secret planted in the trusted process's environment: the jail must never see it."""
    value = secrets.token_hex(16)
    os.environ[SECRET_ENV] = value
    yield value
    os.environ.pop(SECRET_ENV, None)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory, secret: str) -> Path:
    """A stand-in for the service's data dir, with a 'database' holding the secret."""
    folder = tmp_path_factory.mktemp("data")
    (folder / "autograder.db").write_text(f"SQLite format 3 {secret}")
    return folder


@pytest.fixture(scope="module")
def grader(data_dir: Path, secret: str) -> Iterator[CodeGrader]:
    """One warm jailed grader per test module (starting a zygote costs the torch import)."""
    support.require_jail()
    with CodeGrader(support.jail_config(hidden_paths=[data_dir])) as g:
        yield g
