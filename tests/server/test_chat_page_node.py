"""Parts of the chat page's script run in Node: the markdown renderer and the API-key prompt.

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


# Runs the page's api() against a fake server that wants "Bearer k-123", and a user who types
# the key into the prompt; prints what happened as JSON.
API_RUNNER = """
const src = require("fs").readFileSync(process.argv[1], "utf8");
const start = src.indexOf("  const KEY_STORE");
const end = src.indexOf("  // -- markdown subset");
const store = {}, calls = [], prompts = [];
globalThis.sessionStorage = {
  getItem: (k) => store[k] || null, setItem: (k, v) => { store[k] = v; },
};
globalThis.window = { prompt: (text) => { prompts.push(text); return " k-123 "; } };
globalThis.fetch = async (path, options) => {
  const auth = ((options || {}).headers || {}).Authorization || null;
  calls.push([path, auth, (options || {}).body || null]);
  return { status: auth === "Bearer k-123" ? 200 : 401 };
};
const api = new Function(src.slice(start, end) + "\\nreturn api;")();
(async () => {
  const first = await api("ai/flows");
  const second = await api(
    "ai/stream", { method: "POST", body: "{}", headers: { "chat-session-id": "s" } });
  process.stdout.write(JSON.stringify({ statuses: [first.status, second.status], calls, prompts }));
})();
"""


def test_h4_the_chat_page_asks_for_an_api_key_once_on_a_401() -> None:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "-e", API_RUNNER, str(STATIC_DIR / "app.js")],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert json.loads(done.stdout) == {
        "statuses": [200, 200],
        "calls": [
            ["ai/flows", None, None],
            ["ai/flows", "Bearer k-123", None],
            ["ai/stream", "Bearer k-123", "{}"],
        ],
        "prompts": ["This server needs an API key. Enter yours:"],
    }


# Loads parseFrame and readEvents out of app.js and feeds readEvents a body in three chunks.
EVENTS_RUNNER = """
const src = require("fs").readFileSync(process.argv[1], "utf8");
const start = src.indexOf("  function parseFrame");
const end = src.indexOf("  // -- a dropped stream is picked up again");
const readEvents = new Function(src.slice(start, end) + "\\nreturn readEvents;")();
const chunks = JSON.parse(process.argv[2]).map((text) => new TextEncoder().encode(text));
const response = { body: { getReader: () => ({
  read: async () => (chunks.length ? { value: chunks.shift(), done: false } : { done: true }),
}) } };
const seen = [];
readEvents(response, (event) => seen.push(event)).then(() => {
  process.stdout.write(JSON.stringify(seen));
});
"""


def test_o5_the_page_reads_keep_alive_comments_as_nothing() -> None:
    """A silent stream sends `: keep-alive` (O5); the page must not take it for an event."""
    assert NODE is not None
    body = [
        ": keep-alive\n\n: keep-",
        'alive\n\nevent: token\ndata: {"text": "Hi"}\nid: T:1\n\n: keep-alive\n\n',
        'event: done\ndata: {"success": true}\nid: T:2\n\n',
    ]
    done = subprocess.run(
        [NODE, "-e", EVENTS_RUNNER, str(STATIC_DIR / "app.js"), json.dumps(body)],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert json.loads(done.stdout) == [
        {"kind": "token", "data": {"text": "Hi"}, "id": "T:1"},
        {"kind": "done", "data": {"success": True}, "id": "T:2"},
    ]
