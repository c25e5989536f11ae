"""A message read piece by piece: each number belongs to one field at most.

"Built in 1998, plumbing updated 2015, roof from 2018" holds three years; the first reader
that claims one (the year built) takes its span, so the next (the systems) cannot read it
again, and what nobody claimed is left for the question that was asked ("2015" alone, after
"when was the plumbing updated?").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Spans:
    """A text and the parts of it already read."""

    text: str
    taken: list[tuple[int, int]] = field(default_factory=list)

    def free(self, start: int, end: int) -> bool:
        """Whether no reader took any of ``text[start:end]``."""
        return not any(start < stop and begin < end for begin, stop in self.taken)

    def take(self, start: int, end: int) -> None:
        """Mark ``text[start:end]`` as read."""
        self.taken.append((start, end))

    def find(self, pattern: re.Pattern[str]) -> Iterator[re.Match[str]]:
        """The matches of `pattern` in parts nobody took yet (each taken as it is yielded)."""
        for match in pattern.finditer(self.text):
            if self.free(match.start(), match.end()):
                self.take(match.start(), match.end())
                yield match

    def numbers(self) -> list[tuple[int, float]]:
        """The numbers left unread ("2,100" is 2100, "2.1k" is 2100), with their offsets."""
        found = []
        for match in re.finditer(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(k\b)?", self.text):
            if self.free(match.start(), match.end()):
                value = float(match.group(1).replace(",", ""))
                found.append((match.start(), value * (1000 if match.group(2) else 1)))
        return found
