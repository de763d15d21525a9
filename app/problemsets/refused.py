"""Sets in the problems folder that `serve` refused at start-up, kept for the instructor page.

A refused set is not stored, so students only see "unknown problem set" and the reason was on the server's
console alone. `serve` writes each refusal here (<data dir>/refused-sets/<folder>.json) and removes it once the
folder loads; the instructor page lists what is there with its report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.config import Settings

FOLDER = "refused-sets"


@dataclass(frozen=True)
class RefusedSet:
    folder: str
    refused_at: str
    errors: list[dict[str, Any]]
    report: dict[str, Any] | None
    text: str


def _dir(settings: Settings) -> Path:
    return settings.data_dir / FOLDER


def record(
    settings: Settings, folder: Path, *, errors: list[dict[str, Any]], report: dict[str, Any] | None, text: str
) -> None:
    path = _dir(settings)
    path.mkdir(parents=True, exist_ok=True)
    data = {"folder": folder.name, "refused_at": datetime.now(UTC).isoformat(), "errors": errors, "report": report,
            "text": text}  # fmt: skip
    (path / f"{folder.name}.json").write_text(json.dumps(data, ensure_ascii=False))


def clear(settings: Settings, folder: Path) -> None:
    (_dir(settings) / f"{folder.name}.json").unlink(missing_ok=True)


def listed(settings: Settings) -> list[RefusedSet]:
    out = []
    for file in sorted(_dir(settings).glob("*.json")):
        try:
            data = json.loads(file.read_text())
            out.append(RefusedSet(str(data["folder"]), str(data["refused_at"]), list(data.get("errors") or []),
                                  data.get("report"), str(data.get("text") or "")))  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a half-written or foreign file is not worth breaking the instructor page for
    return out
