"""Corrections and withdrawals said mid-sentence, read the same way by every offline model.

`parts("dec 20 to 23, no wait, 21 to 23")` is ``["dec 20 to 23", "21 to 23"]``: the parts in the
order said, so a model that replays them in order keeps the later value. A correction after
its value ("next friday instead", "maria lopez actually") keeps the part before it. A message
whose last part takes a choice back — "book number 4. hmm no actually hold on", "jones at 11,
scratch that", "the last one. let me ask my wife first" — ends in a part `withdrawn` is true
of, and no model acts on it. "I said 5 not 3" restates the earlier message that said 3
(`restate`), so a model that replays the conversation reads "within 5 miles of the airport".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

WITHDRAWAL = "hold on"
"""The part that stands for a choice taken back with nothing said after it ("book 4, scratch
that"): `withdrawn` is true of it."""

_AFTER = r"(?:instead(?!\s+of\b)|actually)"
"""Markers that may follow the value they mark ("next friday instead")."""
_BEFORE = (
    r"no,?\s+wait|wait,?\s+no|no\s+no|(?:hmm+|um+|uh+|erm)[,.]?\s+no\b|sorry,?\s+i\s+meant?"
    r"|i\s+meant|scratch\s+that|on\s+second\s+thoughts?|or\s+rather|correction:?"
    r"|(?P<kept>make\s+that|change\s+that\s+to)|i\s+changed\s+my\s+mind|never\s*mind\s+that"
    r"|(?<=[,.;!]\s)wait\b|(?<=[,.;!])wait\b|^\s*wait\b(?=\s*[,.!])"
)
"""Markers after which the new value comes ("no wait, 21 to 23"); nothing after them takes
the choice back."""
_MARKER = re.compile(rf"\b(?P<after>{_AFTER})\b|(?<!\w)(?P<before>{_BEFORE})(?!\w)", re.IGNORECASE)
_FILLER = r"(?:hmm+|h?m+|um+|uh+|oh|ok(?:ay)?|no|nah|well|erm|ah|sorry|wait|actually|so)"
_WITHDRAW = re.compile(
    rf"^\W*(?:{_FILLER}\W+)*"
    r"(?:hold\s+on|hang\s+on|wait(?:\s+a\s+(?:sec|second|min|minute|moment|bit))?"
    r"|not\s+(?:yet|so\s+fast|sure\s+yet)|let\s+me\s+(?:check|ask|think|talk|confirm"
    r"|sleep\s+on|get\s+back|double.check|run\s+it\s+by)|give\s+me\s+a\s+(?:sec|second|minute"
    r"|moment)|(?:don'?t|do\s+not)\s+book|maybe\s+later|scratch\s+that"
    r"|i(?:'ll|\s+will|\s+need\s+to|\s+have\s+to|'d\s+better|\s+should|\s+gotta)\s+(?:check"
    r"|ask|think|talk|confirm|get\s+back|come\s+back|let\s+you\s+know))\b(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_PAUSE = re.compile(
    rf"(?<=[.,;!?…])\s*(?=(?:{_FILLER}\W+)*(?:hold\s+on|hang\s+on|wait\b|not\s+yet"
    r"|let\s+me\s+(?:check|ask|think|talk|confirm)|give\s+me\s+a\s+(?:sec|second|minute|moment)"
    r"|i(?:'ll|\s+will|\s+need\s+to|\s+have\s+to)\s+(?:check|ask|think|talk)))",
    re.IGNORECASE,
)
"""Where a message pauses before a withdrawal ("jones at 3. hmm hold on"): a part begins."""
_LEAD = re.compile(
    r"^\W*(?:(?:make\s+it|make\s+that|it'?s|its|it\s+is|the|i\s+mean|sorry|so)\W+)*",
    re.IGNORECASE,
)
"""Words before a corrected piece ("make it the 5th"), left out when it is amended in."""
_STILL_SAYS = re.compile(r"\?|\d|\b(?:bye|goodbye|book|take|go with)\b", re.IGNORECASE)
"""What, after a withdrawal word, is said anew: a question, a number, a goodbye, a choice."""
_RESTATE = re.compile(
    r"\b(?:i\s+said\s+|i\s+meant\s+|i\s+wanted\s+|it'?s\s+|make\s+it\s+)?\$?(?P<new>\d+(?:\.\d+)?)"
    r"(?:\s+[a-z]+)?\s*,?\s+not\s+\$?(?P<old>\d+(?:\.\d+)?)\b",
    re.IGNORECASE,
)


def parts(text: str) -> list[str]:
    """The parts of `text` in the order said, split at its corrections (see the module)."""
    chunks = [chunk for chunk in _PAUSE.split(text) if _words(chunk)]
    if len(chunks) < 2:
        return _parts(text)
    return [part for chunk in chunks for part in _parts(chunk.strip(" ,;:-"))]


def _parts(text: str) -> list[str]:
    pieces, kinds, position = [], [], 0
    for found in _MARKER.finditer(text):
        kept_marker = found.end() if found["after"] else found.start()  # "the 7th instead"
        pieces.append(text[position:kept_marker])
        kinds.append("after" if found["after"] else "before")
        position = found.start() if found["kept"] else found.end()  # "make that Rome" stays
    pieces.append(text[position:])
    said = [piece.strip(" ,;:-") for piece in pieces]
    if len(said) == 1 or not any(_words(piece) for piece in said):
        return [text]
    kept = [piece for piece in said if _words(piece)]
    if not _words(said[-1]) and kinds[-1] == "before":
        kept.append(WITHDRAWAL)  # "book 4, scratch that": the choice is taken back
    return kept or [text]


def bare(text: str) -> str:
    """`text` without the correction words around a value ("inception instead", "make that
    heat")."""
    text = re.sub(r"^\W*(?:make\s+(?:it|that)|change\s+(?:it|that)\s+to)\b", "", text, flags=re.I)
    return re.sub(rf"\s*\b{_AFTER}\b\W*$", "", text, flags=re.IGNORECASE).strip(" ,;:-")


def settle(text: str) -> str:
    """What `text` finally says: its last part (`WITHDRAWAL` when it takes a choice back)."""
    return parts(text)[-1]


def withdrawn(text: str) -> bool:
    """Whether the last part of `text` takes a choice back ("hmm actually hold on", "let me
    check my calendar") and says nothing new after it."""
    found = _WITHDRAW.match(settle(text))
    return found is not None and not _STILL_SAYS.search(found["rest"])


def restate(text: str, earlier: Sequence[str]) -> str | None:
    """The earlier message `text` corrects, with the number corrected ("i said 5 miles not 3"
    after "within 3 miles of the airport" is "within 5 miles of the airport"); None when
    `text` corrects no number or no earlier message said the old one."""
    found = _RESTATE.search(text)
    if found is None:
        return None
    old = re.compile(rf"(?<![\d.]){re.escape(found['old'])}(?![\d.])")
    for message in reversed(earlier):
        if old.search(message):
            return old.sub(found["new"], message, count=1)
    return None


def amend(before: str, after: str) -> str:
    """`after` as a whole value when it corrects only a piece of `before`: "02109" after "10 Main
    St, Boston, MA 02108" is "10 Main St, Boston, MA 02109", "the 5th" after "4th of july 1992"
    is "5th of july 1992", "21 to 23" after "dec 20 to 23" is "dec 21 to 23". A piece is found
    by its shape (numbers of the same kind, the same words between them); `after` as it is
    when it has no number or `before` has no such piece."""
    said = _LEAD.sub("", after).strip(" .,!")
    tokens = re.findall(r"\$?\d+(?:[.:]\d+)?(?:st|nd|rd|th|am|pm)?|[a-z']+", said.lower())
    if (
        not tokens
        or len(tokens) > 5
        or not any(t[-1].isdigit() or t[0] in "$0123456789" for t in tokens)
    ):
        return after
    shape = r"\W+".join(_shape(token) for token in tokens)
    found = list(re.finditer(rf"(?<![\w$]){shape}(?!\w)", before, re.IGNORECASE))
    if not found:
        return after
    last = found[-1]
    return before[: last.start()] + said + before[last.end() :]


def expand(messages: Sequence[str], earlier: Sequence[str] = ()) -> list[str]:
    """Every message as its parts, in order, each correction of a piece amended into the value
    it corrects (`amend`), and "I said X not Y" restated (against `earlier` too: what was read
    before `messages`): what a model that replays a conversation reads."""
    read: list[str] = []
    for message in messages:
        restated = restate(message, [*earlier, *read])
        if restated is not None:
            read.append(restated)
            continue
        said = parts(message)
        earlier_parts = ["", *said[:-1]]
        read.extend(
            b if b == WITHDRAWAL else amend(a, b) for a, b in zip(earlier_parts, said, strict=True)
        )
    return read


def _shape(token: str) -> str:
    """A pattern for a token's kind: a number of that kind, else the word itself."""
    number = re.fullmatch(r"(\$?)(\d+)([.:]\d+)?(st|nd|rd|th|am|pm)?", token)
    if number is None:
        return re.escape(token)
    dollar, digits, decimals, suffix = number.groups()
    width = rf"\d{{{len(digits)}}}" if len(digits) >= 3 else r"\d{1,2}"
    tail = r"(?:[.:]\d+)?" if decimals else ""
    end = r"(?:st|nd|rd|th)?" if suffix in ("st", "nd", "rd", "th") else re.escape(suffix or "")
    return rf"{re.escape(dollar)}{width}{tail}{end}"


def _words(piece: str) -> bool:
    """Whether `piece` says anything but correction words."""
    return re.search(r"\w", re.sub(rf"\b{_AFTER}\b", "", piece, flags=re.IGNORECASE)) is not None
