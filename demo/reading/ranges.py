"""The words that join the two ends of a date range, read one way by every demo."""

from __future__ import annotations

import re

_JOINS = re.compile(
    r"(?<!\w)(?:'?til+|until|thru|through|tru|up\s+to|up\s+until)(?=\s+(?:the\s+|next\s+|this\s+)?"
    r"(?:\d|[a-z]{3,}day\b|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri"
    r"|sat|sun|tomorrow|xmas|christmas|new\s+year))",
    re.IGNORECASE,
)


def range_words(text: str) -> str:
    """`text` with the words that join a range's ends ("til", "thru", "through", "until", "up
    to") written "to", as the demos' date grammars read them: "from the 3rd til the 7th" is
    "from the 3rd to the 7th". A word not followed by a date stays ("through the city")."""
    return _JOINS.sub("to", text)
