"""Partial credit over the sub-cases of one check: the score is the fraction of cases that passed.

The feedback's headline is the first failed case's own headline (what to fix); the count of failed cases and
each case's message are the details (graders.words: the pages word them in the viewer's language).
"""

from __future__ import annotations

from collections.abc import Callable

from graders.code.check_api import N_, CheckFailed, Said, Words, said, text_said, words_of

COUNT = N_("%(prop)s: %(failed)g of %(total)g cases failed.")
CASE = N_("- %(label)s: %(message)s")


class Tally:
    """Collects pass/fail per labelled case; ``finish`` raises CheckFailed with partial credit if any failed.

    ``prop`` names the property (a ``Said`` to have it translated).
    """

    def __init__(self, prop: str | Said) -> None:
        self.prop = prop
        self.passed: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.words: dict[str, Words] = {}
        self.weights: dict[str, float] = {}

    def run(self, label: str, case: Callable[[], None]) -> None:
        """Run one case; a CheckFailed (or AssertionError) it raises marks the case failed with its message."""
        try:
            case()
        except CheckFailed as err:
            self.fail(label, err.words or err.feedback, weight=None)
        except AssertionError as err:
            self.fail(label, str(err) or "assertion failed", weight=None)
        else:
            self.passed.append(label)

    def fail(self, label: str, message: str | Said | Words, *, weight: float | None = 1.0) -> None:
        """Record a failure worth ``weight`` cases (e.g. one crash that sinks several items at once)."""
        words = words_of(message)
        self.failed.append((label, words.english()))
        self.words[label] = words
        if weight is not None:
            self.weights[label] = weight

    def _weight(self, labels: list[str]) -> float:
        return sum(self.weights.get(label, 1.0) for label in labels)

    def _prop(self) -> Said:
        return self.prop if isinstance(self.prop, Said) else text_said(self.prop)

    def finish(self, note: str = "") -> str:
        """The passing feedback; raises CheckFailed (score = passed fraction) when a case failed."""
        passed, failed = self._weight(self.passed), self._weight([label for label, _ in self.failed])
        total = passed + failed
        if self.failed:
            first = self.words[self.failed[0][0]]
            details = [said("tally.count", COUNT, prop=self._prop(), failed=failed, total=total)]
            for label, _ in self.failed:
                case = self.words[label]
                details.append(said("tally.case", CASE, label=text_said(label), message=case.headline))
                details += case.details
            if note:
                details.append(text_said(note))
            raise CheckFailed(Words.fitted(first.headline, details), score_fraction=passed / total)
        prop = self.prop.english() if isinstance(self.prop, Said) else self.prop
        return f"{prop}: all {total:g} cases passed ({', '.join(self.passed)})."
