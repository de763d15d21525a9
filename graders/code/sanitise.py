"""Making a student's exception message safe to show in feedback.

Everything the jail reports is data the student controls. A submission could raise
``ValueError(repr(q.tolist()))`` to carry hidden inputs out through the feedback of a hidden check, so messages of
non-visible checks keep their type and a short text with runs of numbers collapsed.
"""

from __future__ import annotations

import re

HIDDEN_MESSAGE_CHARS = 160
VISIBLE_MESSAGE_CHARS = 500
WHERE_CHARS = 80

# One "value" a hidden input could be written as: a number (int, float, exponent), a bool, nan/inf, None.
_VALUE = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|True|False|None|nan|inf)"
# Three or more values separated only by commas, whitespace, brackets, semicolons, colons or bars.
_SEP = r"[\s,;:|()\[\]{}]+"
_VALUE_RUN = re.compile(rf"[\[(]*{_VALUE}(?:{_SEP}{_VALUE}){{2,}}[\])]*")
# Three or more decimals with at most three characters of any other kind between them ("a0.1b0.2c0.3").
_DECIMAL = r"[-+]?\d*\.\d+(?:[eE][-+]?\d+)?"
_DECIMAL_RUN = re.compile(rf"{_DECIMAL}(?:\D{{1,3}}?{_DECIMAL}){{2,}}")
# A single number with many digits (a value written out to full precision).
_LONG_NUMBER = re.compile(r"[-+]?\d*\.?\d{6,}(?:[eE][-+]?\d+)?|[-+]?\d+\.\d{4,}(?:[eE][-+]?\d+)?")
# A long blob of letters and digits (hex, base64): values encoded to slip past the number patterns.
_BLOB = re.compile(r"[A-Za-z0-9+/=]{24,}")
# The location the sandbox appends to a message: " (line 16, in scaled_attention)".
_WHERE = re.compile(r"\s\((line \d+, in [^()]{1,80})\)$")


def _collapse_blob(match: re.Match[str]) -> str:
    text = match.group(0)
    has_digit = any(c.isdigit() for c in text)
    return "…" if has_digit and any(c.isalpha() for c in text) else text


def sanitise(message: str, *, visible: bool) -> str:
    """A student's exception message made safe to show.

    Visible checks (whose inputs may be shown): whitespace normalised, cut at ``VISIBLE_MESSAGE_CHARS``. Hidden
    checks: runs of three or more numbers or bools (lists, tensors, shapes), of three or more decimals with a few
    characters between them, single long numbers and long
    letter-and-digit blobs become "…", then the message is cut at ``HIDDEN_MESSAGE_CHARS``; the sandbox's
    "(line N, in f)" suffix is kept.
    """
    message = " ".join(message.split())
    limit = VISIBLE_MESSAGE_CHARS
    where = ""
    if not visible:
        limit = HIDDEN_MESSAGE_CHARS
        found = _WHERE.search(message)
        if found:
            where, message = f" ({found.group(1)[:WHERE_CHARS]})", message[: found.start()]
        message = _VALUE_RUN.sub("…", message)
        message = _DECIMAL_RUN.sub("…", message)
        message = _LONG_NUMBER.sub("…", message)
        message = _BLOB.sub(_collapse_blob, message)
        message = re.sub(r"…(?:[\s,;:|]*…)+", "…", message)
    if len(message) > limit:
        message = message[: limit - 1] + "…"
    return message + where
