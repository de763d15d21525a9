"""A grading process that holds many fds still grades (the issue: ~1100 half-open HTTP connections pushed the
server past fd 1023, every select() in the sandbox failed, and every code submission ended in error).

Each test holds fd numbers up to past 1100, so whatever the code under test opens next gets a number above 1023.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Iterator

import pytest

from graders.answers import symbolic_pool
from graders.code.runner import CodeGrader
from tests.sandbox import support

HIGH = 1100


@pytest.fixture
def low_fds_taken() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < HIGH + 200:
        pytest.fail(f"the hard fd limit ({hard}) is too low for this test")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, HIGH + 200), hard))
    held: list[int] = []
    try:
        while not held or held[-1] < HIGH:
            held.append(os.open(os.devnull, os.O_RDONLY))
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_zygote_started_and_used_above_fd_1023(low_fds_taken: None) -> None:
    support.require_jail()
    with CodeGrader(support.jail_config()) as grader:
        result = grader.grade(source=support.GOOD_SOURCE, problem=support.problem(), checks=support.checks(grader))
    assert result.score == support.FULL_MARKS, result.to_dict()


def test_a_warm_zygote_used_above_fd_1023(grader: CodeGrader, low_fds_taken: None) -> None:
    # The zygote's control socket is low; the child's pipes, made per submission, are above 1023.
    result = grader.grade(source=support.GOOD_SOURCE, problem=support.problem(), checks=support.checks(grader))
    assert result.score == support.FULL_MARKS, result.to_dict()


def test_symbolic_workers_above_fd_1023(low_fds_taken: None) -> None:
    symbolic_pool.shutdown()  # the next worker is started now, with its pipes above 1023
    try:
        assert symbolic_pool.check_equal("sin(x)**2 + cos(x)**2", "1", ["x"]) == "equal"
    finally:
        symbolic_pool.shutdown()
