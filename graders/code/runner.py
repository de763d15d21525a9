"""CodeGrader: the public entry point of code grading (used by the app's workers and the CLI)."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

from graders.code import verdicts
from graders.code.checker.pool import CheckerPool
from graders.code.checks import CheckSpec
from graders.code.slot_grading import grade_in_slot
from graders.model import CodeProblem
from graders.results import GradeResult, Verdict
from graders.sandbox.config import SandboxConfig
from graders.sandbox.errors import SandboxError
from graders.sandbox.pool import SlotPool

log = logging.getLogger(__name__)


class CodeGrader:
    """Grades Python submissions against trusted checks, with one warm jailed zygote per slot.

    Thread-safe: call ``grade`` from up to ``config.slots`` threads at once (more threads wait for a slot).

    Args:
        config: how to jail student code; mode="unsafe-local" requires dev_mode=True.
    """

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._pool = SlotPool(config)
        # Instructor code never runs here: every check is imported and run in its set's jailed checker.
        self._checkers = CheckerPool(config)

    def checks(self, root: Path, relative: str) -> list[CheckSpec]:
        """The checks ``root/relative`` defines, imported in the set's jailed checker (cached per file).

        Raises:
            ChecksUnavailable: the file does not import, or describes its checks wrongly (the set's failure).
        """
        return self._checkers.describe(root, relative)

    def grade(self, *, source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult:
        """Grade one submission.

        Args:
            source: the student's Python file.
            problem: gives the entrypoints and limits.
            checks: from ``checks`` (run in the set's checker), in order.

        Returns:
            A GradeResult holding a CheckResult for every check (score 0 for those not run).

        Raises:
            SandboxError: the sandbox failed (not the student) on every attempt; do not score the submission.
        """
        too_big = self._refuse_size(source, problem, checks)
        if too_big is not None:
            return too_big
        last: SandboxError | None = None
        for attempt in range(self.config.retries + 1):
            with (
                self._pool.borrow() as slot,
                self._checkers.for_slot(self._pool.slots.index(slot), slot.cgroups),
                slot.cgroups.this_thread() if slot.cgroups is not None else contextlib.nullcontext(),
            ):
                try:
                    return grade_in_slot(slot, self.config, source=source, problem=problem, checks=checks)
                except SandboxError as exc:
                    last = exc
                    log.warning(
                        "sandbox failure (attempt %d), restarting the zygote: %s", attempt + 1, verdicts.loggable(exc)
                    )
                    with contextlib.suppress(SandboxError):
                        slot.restart()
        raise SandboxError(f"grading failed {self.config.retries + 1} times: {last}") from last

    @staticmethod
    def _refuse_size(source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult | None:
        size_kb = len(source.encode()) / 1024
        if size_kb <= problem.limits.source_kb:
            return None
        message = f"the source is {size_kb:.0f} KiB; the limit is {problem.limits.source_kb} KiB"
        return GradeResult(Verdict.RUNTIME_ERROR, verdicts.all_not_run(checks, message), message)

    def close(self) -> None:
        """Stop every zygote and checker and release their uids."""
        self._checkers.close()
        self._pool.close()

    def __enter__(self) -> CodeGrader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def grade_file(source: str | Path, problem: CodeProblem, checks_path: Path, config: SandboxConfig) -> GradeResult:
    """One-off grading (CLI, tests): a source path or text, a checks file; starts and stops its own grader."""
    text = source.read_text() if isinstance(source, Path) else source
    with CodeGrader(config) as grader:
        return grader.grade(source=text, problem=problem, checks=grader.checks(checks_path.parent, checks_path.name))
