"""What an import could not carry over, per session, in words a person can act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ImportReport"]


@dataclass(slots=True)
class ImportReport:
    """The outcome of converting one PicoFlow session document.

    `lost` lists what could not be mapped and was dropped or guessed (read these before
    switching over); `changed` lists what was carried over in a different form. `source` is the
    PicoFlow document generation that was recognised: "G3" (schema 1.5, one `flow` object) or
    "G2" (the older `flows` array).
    """

    session_id: str
    source: str
    lost: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON, for `--report` files and logs."""
        return {
            "session_id": self.session_id,
            "source": self.source,
            "lost": list(self.lost),
            "changed": list(self.changed),
        }

    def render(self) -> str:
        """A few lines for a terminal: the session, then each loss and change."""
        lines = [
            f"{self.session_id} ({self.source}): {len(self.lost)} lost, {len(self.changed)} changed"
        ]
        lines += [f"  lost: {text}" for text in self.lost]
        lines += [f"  changed: {text}" for text in self.changed]
        return "\n".join(lines)
