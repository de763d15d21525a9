"""JSON log lines through the standard logging module: one object per line, with the request id when there is one.

Every record becomes ``{"ts", "level", "logger", "msg", "request_id", ...fields}``. Structured fields travel in
``extra={"fields": {...}}``; only JSON scalars are kept and every string is cut to a bound, because some of them
are written by students (a problem id, a sandbox message) and must not flood or forge lines. ``json.dumps`` with
``ensure_ascii`` escapes newlines, control characters and every non-ASCII character, so one record is always one
line of plain ASCII, whatever the text holds.

Nothing here decides what is safe to log: callers never pass secrets, tokens, passwords or student source.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import IO, Any

from app.request_id import current_request_id

MAX_MESSAGE = 2000
MAX_FIELD = 200
_SCALARS = (bool, int, float, type(None))


def bounded(text: str, limit: int = MAX_FIELD) -> str:
    return text if len(text) <= limit else text[:limit] + f"...[{len(text) - limit} more]"


def _clean(value: object) -> object:
    if isinstance(value, _SCALARS):
        return value
    return bounded(str(value))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": bounded(record.getMessage(), MAX_MESSAGE),
        }
        request_id = getattr(record, "request_id", None) or current_request_id()
        if request_id:
            doc["request_id"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                doc.setdefault(str(key), _clean(value))
        if record.exc_info:
            doc["exc"] = bounded(self.formatException(record.exc_info), MAX_MESSAGE * 4)
        return json.dumps(doc, ensure_ascii=True, separators=(",", ":"))


def configure(fmt: str = "json", level: int = logging.INFO, stream: IO[str] | None = None) -> logging.Handler:
    """Send the root logger's records to ``stream`` (stderr) as JSON lines, or as plain text for a terminal."""
    handler = logging.StreamHandler(stream or sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn's own access log would be a second, unstructured line per request: ours (app.access_log) replaces it.
    logging.getLogger("uvicorn.access").disabled = True
    for name in ("uvicorn", "uvicorn.error", "celery"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True
    return handler
