"""One CodeGrader (warm sandbox zygotes) per process, built on first use from the settings."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from app.config import Settings
from graders.code.checks import CheckSpec
from graders.code.grader import CodeGraderLike
from graders.model import CodeProblem
from graders.results import GradeResult

if TYPE_CHECKING:
    from graders.sandbox.config import SandboxConfig

log = logging.getLogger(__name__)


class LazyCodeGrader:
    """Builds the sandbox pool on first call, so answer-only deployments and tests never start a zygote."""

    def __init__(self, settings: Settings, slots: int | None = None) -> None:
        self.settings = settings
        self.slots = slots
        self._grader: CodeGraderLike | None = None
        self._lock = threading.Lock()

    def __call__(self) -> CodeGraderLike:
        if self._grader is None:
            with self._lock:
                if self._grader is None:
                    self._grader = build_code_grader(self.settings, self.slots)
        return self._grader

    def prewarm(self) -> None:
        """Start the zygotes in the background (seconds of torch import), so no submission waits for them."""

        def warm() -> None:
            try:
                self()
            except Exception:  # the first submission will retry and report it; the service stays up
                log.exception("could not start the sandbox")

        threading.Thread(target=warm, name="sandbox-prewarm", daemon=True).start()

    def grade(self, *, source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult:
        return self().grade(source=source, problem=problem, checks=checks)

    def checks(self, root: Path, relative: str) -> list[CheckSpec]:
        return self().checks(root, relative)

    def close(self) -> None:
        if self._grader is not None:
            self._grader.close()  # type: ignore[attr-defined]
            self._grader = None


def build_code_grader(settings: Settings, slots: int | None = None) -> CodeGraderLike:
    from graders.code.runner import CodeGrader

    return CodeGrader(sandbox_config(settings, slots))


def sandbox_config(settings: Settings, slots: int | None = None) -> SandboxConfig:
    from graders.sandbox.config import SandboxConfig

    return SandboxConfig(
        mode=settings.sandbox,
        slots=slots or max(1, settings.workers),
        dev_mode=settings.dev_mode,
        hidden_paths=[settings.data_dir.resolve(), settings.problems_dir.resolve()],
        device=resolve_device(settings.sandbox_device),
    )


def resolve_device(choice: str) -> Literal["cpu", "cuda"]:
    """ "auto" picks CUDA when this worker has a GPU, so the timing checks measure on it."""
    if choice == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" if choice == "cuda" else "cpu"
