"""Prompt utilities of PicoFlow (U1): prompt files next to the code, placeholders, JSON replies.

PicoFlow apps keep their prompts as Markdown files beside the step that uses them, fill
``{{KEY}}`` placeholders from state, and parse a model's JSON answer that may come wrapped in a
code fence. These are the same tools with PicoFlow's rules, so a ported prompt reads the same:
`Prompt.replace` leaves a placeholder for every falsy value, exactly like PicoFlow, which is why
`Prompt.replace2` exists for values such as ``0`` and ``""``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["Prompt", "FlowPrompt", "parse_json"]

_FILES: dict[Path, str] = {}


class Prompt:
    """Reading and filling prompt texts; all static, like PicoFlow's `Prompt` class."""

    @staticmethod
    def file(path: str | os.PathLike[str]) -> str:
        """The text of a prompt file, a relative path resolved against the caller's folder.

        "The caller" is the module that calls `Prompt.file`, so ``Prompt.file("prompt/role.md")``
        in ``app/steps.py`` reads ``app/prompt/role.md`` wherever the process was started.
        Code without a module file (a REPL, `exec`) resolves against the working directory.
        Each file is read once per process (cached by absolute path): call it at import time
        or in `get_prompt`, as you like.

        Raises:
            TypeError: `path` is not a string or path.
            FileNotFoundError: there is no such file; the message gives the resolved path.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(
                f"Prompt.file() takes a file path (str or pathlib.Path), got "
                f"{type(path).__name__}. Pass e.g. Prompt.file('prompt/role.md')."
            )
        caller = sys._getframe(1).f_globals.get("__file__")
        base = Path(caller).resolve().parent if isinstance(caller, str) else Path.cwd()
        target = (base / Path(path)).resolve()
        text = _FILES.get(target)
        if text is None:
            if not target.is_file():
                where = f"the folder of {caller}" if isinstance(caller, str) else "the cwd"
                raise FileNotFoundError(
                    f"Prompt.file({str(path)!r}): there is no file at {target} (a relative path "
                    f"is resolved against {where}). Check the name, and that the file is "
                    "shipped next to the module (package data)."
                )
            text = _FILES[target] = target.read_text(encoding="utf-8")
        return text

    @staticmethod
    def replace(text: str, values: Mapping[str, Any]) -> str:
        """Fill each ``{{KEY}}`` with ``values[KEY]`` when that value is truthy (PicoFlow's rule).

        A falsy value (``None``, ``""``, ``0``, ``False``, an empty list) leaves the placeholder
        as it is, so the model sees that something is unknown; use `replace2` to write ``0``
        and ``""`` too. Values are written with `str()`; keys not in `values` are left alone.

        Raises:
            TypeError: `text` is not a string or `values` is not a mapping.
        """
        return _fill("replace", text, values, lambda value: bool(value))

    @staticmethod
    def replace2(text: str, values: Mapping[str, Any]) -> str:
        """Like `replace`, but only ``None`` leaves the placeholder (``0`` and ``""`` are written).

        Raises:
            TypeError: `text` is not a string or `values` is not a mapping.
        """
        return _fill("replace2", text, values, lambda value: value is not None)


def _fill(name: str, text: object, values: object, keep: Callable[[Any], bool]) -> str:
    if not isinstance(text, str):
        raise TypeError(
            f"Prompt.{name}() takes the prompt text first, as a str; got {type(text).__name__}."
        )
    if not isinstance(values, Mapping):
        raise TypeError(
            f"Prompt.{name}(text, values): values must be a mapping of placeholder names to "
            f"values, e.g. {{'UserName': name}}; got {type(values).__name__}."
        )
    filled = text
    for key, value in values.items():
        if keep(value):
            filled = filled.replace("{{" + str(key) + "}}", str(value))
    return filled


class FlowPrompt:
    """Prompt fragments the framework provides (PicoFlow's `FlowPrompt`)."""

    END_CHAT = (
        "If the user clearly wants to stop the conversation (for example: 'bye', 'I'm done', "
        "'stop', 'end the chat', 'no thanks, that's all'), call the terminate_session tool. "
        "Do not call it for anything else, and never only because a question was answered."
    )
    """Tells the model when to call the end tool (`Step.use_end_tool`)."""

    @staticmethod
    def end_chat(tool_name: str = "end_chat") -> str:
        """`END_CHAT` for an end tool of another name (G2 ports call it ``end_chat``)."""
        return FlowPrompt.END_CHAT.replace("terminate_session", tool_name)


def parse_json(text: str) -> Any:
    """A model's JSON answer, parsed; None when it is not JSON (PicoFlow's `parseJson`).

    The text is trimmed and a leading ```` ``` ```` / ```` ```json ```` fence and a trailing
    one are stripped. Objects, arrays and scalars parse; ``NaN`` and ``Infinity`` do not (as in
    JavaScript), since state must be JSON (S5).

    Raises:
        TypeError: `text` is not a string (a structured reply is already an object: see V4).
    """
    if not isinstance(text, str):
        raise TypeError(
            f"parse_json() takes the model's reply text, got {type(text).__name__}. A step with "
            "an output_schema already receives the validated object."
        )
    body = text.strip()
    if body.startswith("```"):
        body = body[3:]
        body = body[4:] if body[:4].lower() == "json" else body
    body = body.removesuffix("```").strip()
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except ValueError:
        return None


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
