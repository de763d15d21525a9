"""Partial credit over the sub-cases of one check: the score is the fraction of cases that passed."""

from __future__ import annotations

from collections.abc import Callable

from graders.code.check_api import CheckFailed


class Tally:
    """Collects pass/fail per labelled case; ``finish`` raises CheckFailed with partial credit if any failed."""

    def __init__(self, prop: str) -> None:
        self.prop = prop
        self.passed: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.weights: dict[str, float] = {}

    def run(self, label: str, case: Callable[[], None]) -> None:
        """Run one case; a CheckFailed (or AssertionError) it raises marks the case failed with its message."""
        try:
            case()
        except CheckFailed as err:
            self.failed.append((label, err.feedback))
        except AssertionError as err:
            self.failed.append((label, str(err) or "assertion failed"))
        else:
            self.passed.append(label)

    def fail(self, label: str, message: str, *, weight: float = 1.0) -> None:
        """Record a failure worth ``weight`` cases (e.g. one crash that sinks several items at once)."""
        self.failed.append((label, message))
        self.weights[label] = weight

    def _weight(self, labels: list[str]) -> float:
        return sum(self.weights.get(label, 1.0) for label in labels)

    def finish(self, note: str = "") -> str:
        """The passing feedback; raises CheckFailed (score = passed fraction) when a case failed."""
        passed, failed = self._weight(self.passed), self._weight([label for label, _ in self.failed])
        total = passed + failed
        if self.failed:
            lines = [f"{self.prop}: {failed:g} of {total:g} cases failed."]
            lines += [f"- {label}: {message}" for label, message in self.failed]
            if note:
                lines.append(note)
            raise CheckFailed("\n".join(lines), score_fraction=passed / total)
        return f"{self.prop}: all {total:g} cases passed ({', '.join(self.passed)})."
