"""Errors of a problem set: each names the file, the path inside it and what was expected."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class SetError:
    file: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.path}" if self.path else self.file
        return f"{where}: {self.message}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ProblemSetInvalid(Exception):
    """The set cannot be used; ``errors`` lists every problem found, not just the first."""

    def __init__(self, errors: list[SetError]) -> None:
        super().__init__("; ".join(str(e) for e in errors[:5]) + (" ..." if len(errors) > 5 else ""))
        self.errors = errors
