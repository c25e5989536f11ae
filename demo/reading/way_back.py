"""A way back to the criteria, read one way by every demo (issue 35 item 4).

From a list of hotels, a package view or a comparison, a person who says "start over", "can we
start again", "I want to change my dates", "different dates please" or "let's redo the plan"
wants the criteria back — with what is known kept — not another look at the list; `way_back`
is true of such a message. "Go back" alone is `goes_back`: each demo says where back is (the
page before, the list, or the criteria). "I said 250 not 200" corrects a number said earlier
(`corrects_a_number`): a list, which shows no earlier message, hands it to the criteria.
"""

from __future__ import annotations

import re

_WAY_BACK = re.compile(
    r"\b(?:start(?:ing)?|begin|do)\s+(?:it\s+|this\s+|all\s+)?(?:over|again|afresh)\b"
    r"|\bfrom\s+(?:scratch|the\s+(?:top|beginning|start))\b|\brestart\b|\bre-?do\b|\bre-?plan\b"
    r"|\bchange\s+(?:my|our|the|a\s+few|some)\s+(?:\w+\s+)?(?:dates?|days?|trip|plans?|details"
    r"|criteria|search|budget|destination|travell?ers|nights?|stay|room|filters|requirements"
    r"|preferences|mind\s+about\s+the\s+(?:dates|trip))\b"
    r"|\b(?:different|other|new)\s+(?:dates|days|destination|budget|criteria|plan)\b"
    r"|\b(?:back\s+to|change)\s+(?:the\s+)?(?:criteria|search|planning|plan|details)\b",
    re.IGNORECASE,
)
_GO_BACK = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|hmm+|um+|no|nah|wait|please|pls|can\s+we|could\s+we|let'?s|lets)\W+)*"
    r"(?:go(?:ing)?\s+back|back|take\s+me\s+back|step\s+back)"
    r"(?:\s+(?:please|pls|a\s+step|one\s+step))?\W*$",
    re.IGNORECASE,
)
_NUMBER_NOT = re.compile(
    r"\b(?:i\s+said|i\s+meant|i\s+wanted|i\s+asked\s+for)\s+\$?\d+(?:\.\d+)?(?:\s+[a-z]+)?"
    r"\s*,?\s+not\s+\$?\d",
    re.IGNORECASE,
)


def way_back(text: str) -> bool:
    """Whether `text` asks for the criteria back: to start over, or to change what was asked."""
    return _WAY_BACK.search(text) is not None


def goes_back(text: str) -> bool:
    """Whether `text` is only "go back" ("ok go back", "back please", "can we go back?")."""
    return _GO_BACK.match(text) is not None


def corrects_a_number(text: str) -> bool:
    """Whether `text` says a number said before was another ("i said 250 not 200")."""
    return _NUMBER_NOT.search(text) is not None
