"""Take file paths, URLs and host:port pairs out of error text the model will read (H2).

A tool's exception text goes to the model as its tool result (R6), and from there it can reach
the user verbatim. The text stays useful ("Permission denied", "no such table"), but where the
error named the machine's files or servers, the model reads a placeholder; the full text is in
the log.
"""

from __future__ import annotations

import re

__all__ = ["redact"]

_PATTERNS = [
    (re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()]+"), "<url>"),
    (re.compile(r"\b[A-Za-z]:\\[^\s'\"<>]*"), "<path>"),
    (re.compile(r"(?<![\w.~])~?/(?:[^\s/'\"<>:]+/)*[^\s/'\"<>:]+"), "<path>"),
    (
        re.compile(r"\b(?:\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w-]*(?:\.[\w-]+)*):\d{2,5}\b"),
        "<host>",
    ),
]


def redact(text: str) -> str:
    """`text` with paths, URLs and host:port pairs replaced by placeholders.

    >>> redact("[Errno 13] Permission denied: '/srv/app/data/prices.csv'")
    "[Errno 13] Permission denied: '<path>'"
    >>> redact("connection refused (db-1.internal:27017) via mongodb://u:p@db-1/x at 10:30")
    'connection refused (<host>) via <url> at 10:30'
    """
    for pattern, placeholder in _PATTERNS:
        text = pattern.sub(placeholder, text)
    return text
