"""The chat page's markdown renderer, run in Node: tables read well without emoji fonts.

Skipped, with the reason, only when no `node` binary is installed; the browser tests
(test_chat_page_browser.py) cover the rest of the page.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import picoflow.server

STATIC_DIR = Path(picoflow.server.__file__).parent / "static"

NODE = shutil.which("node")
pytestmark = pytest.mark.skipif(
    NODE is None, reason="node is not installed (apt-get install nodejs)"
)

# Loads the renderer's functions out of app.js (they sit between two marker comments) and
# prints renderMarkdown(argv[2]).
RUNNER = """
const src = require("fs").readFileSync(process.argv[1], "utf8");
const start = src.indexOf("  function escapeHtml");
const end = src.indexOf("  // -- the transcript on screen");
const render = new Function(src.slice(start, end) + "\\nreturn renderMarkdown;")();
process.stdout.write(render(JSON.parse(process.argv[2])));
"""


def render(markdown: str) -> str:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", RUNNER, str(STATIC_DIR / "app.js"), json.dumps(markdown)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout


YES = '<span class="mark yes" role="img" aria-label="yes">\u2713</span>'
NO = '<span class="mark no" role="img" aria-label="no">\u2717</span>'


def test_table_emoji_marks_become_text_marks_every_font_has() -> None:
    html = render("| hotel | pool | gym |\n|---|:-:|:-:|\n| Inn | ✅ | ❌ |\n| Lodge | ✔️ | ✖️ |")
    assert html == (
        '<div class="table-wrap"><table><thead><tr><th>hotel</th><th class="center">pool</th>'
        '<th class="center">gym</th></tr></thead><tbody>'
        f'<tr><td>Inn</td><td class="center">{YES}</td><td class="center">{NO}</td></tr>'
        f'<tr><td>Lodge</td><td class="center">{YES}</td><td class="center">{NO}</td></tr>'
        "</tbody></table></div>"
    )


def test_markdown_is_escaped_before_it_is_formatted() -> None:
    assert render("**Lisbon** <b>Inn</b>\n1. one") == (
        '<p><strong>Lisbon</strong> &lt;b&gt;Inn&lt;/b&gt;</p><ol><li value="1">one</li></ol>'
    )
