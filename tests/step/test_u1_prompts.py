"""U1: Prompt.file, Prompt.replace / replace2, FlowPrompt.END_CHAT and parse_json."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path
from typing import Any

import pytest

from picoflow import FlowPrompt, Prompt, parse_json


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"u1_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_u1_prompt_file_resolves_against_the_calling_modules_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tmp_path / "app"
    (app / "prompt").mkdir(parents=True)
    (app / "prompt" / "role.md").write_text("You are a travel assistant.\n", encoding="utf-8")
    (app / "steps.py").write_text(
        textwrap.dedent(
            """
            from picoflow import Prompt

            ROLE = Prompt.file("prompt/role.md")

            def read(name):
                return Prompt.file(name)
            """
        ),
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # not where the module is
    module = _load(app / "steps.py")
    assert module.ROLE == "You are a travel assistant.\n"
    assert module.read(Path("prompt") / "role.md") == module.ROLE


def test_u1_prompt_file_is_read_once_per_process(tmp_path: Path) -> None:
    path = tmp_path / "once.md"
    path.write_text("first", encoding="utf-8")
    assert Prompt.file(path) == "first"
    path.write_text("second", encoding="utf-8")
    assert Prompt.file(path) == "first"  # cached by absolute path, as PicoFlow does


def test_u1_prompt_file_without_a_module_file_reads_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "here.md").write_text("from the cwd", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"Prompt": Prompt}
    exec("text = Prompt.file('here.md')", namespace)  # noqa: S102 - code without __file__
    assert namespace["text"] == "from the cwd"


def test_u1_prompt_file_names_the_resolved_path_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        Prompt.file(tmp_path / "nope.md")
    message = str(caught.value)
    assert f"there is no file at {tmp_path / 'nope.md'}" in message
    assert "shipped next to the module" in message


def test_u1_prompt_file_refuses_what_is_not_a_path() -> None:
    with pytest.raises(TypeError) as caught:
        Prompt.file(42)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "Prompt.file() takes a file path (str or pathlib.Path), got int. Pass e.g. "
        "Prompt.file('prompt/role.md')."
    )


def test_u1_prompt_replace_fills_only_truthy_values() -> None:
    text = "Hi {{Name}}, {{Age}} years, {{City}}, {{Note}}, {{Name}} again, {{Other}}"
    values = {"Name": "Ada", "Age": 0, "City": "", "Note": None}
    assert Prompt.replace(text, values) == (
        "Hi Ada, {{Age}} years, {{City}}, {{Note}}, Ada again, {{Other}}"
    )


def test_u1_prompt_replace2_leaves_only_none() -> None:
    text = "{{Name}}|{{Age}}|{{City}}|{{Note}}|{{Flag}}"
    values = {"Name": "Ada", "Age": 0, "City": "", "Note": None, "Flag": False}
    assert Prompt.replace2(text, values) == "Ada|0||{{Note}}|False"


def test_u1_prompt_replace_writes_other_values_with_str() -> None:
    assert Prompt.replace("{{N}} / {{L}}", {"N": 3.5, "L": [1, 2]}) == "3.5 / [1, 2]"


@pytest.mark.parametrize("replace", [Prompt.replace, Prompt.replace2])
def test_u1_prompt_replace_refuses_bad_arguments(replace: Any) -> None:
    name = replace.__name__
    with pytest.raises(TypeError) as caught:
        replace(None, {})
    assert str(caught.value) == (
        f"Prompt.{name}() takes the prompt text first, as a str; got NoneType."
    )
    with pytest.raises(TypeError) as caught:
        replace("{{A}}", [("A", 1)])
    assert str(caught.value) == (
        f"Prompt.{name}(text, values): values must be a mapping of placeholder names to "
        "values, e.g. {'UserName': name}; got list."
    )


def test_u1_flow_prompt_end_chat_names_the_end_tool() -> None:
    assert "terminate_session" in FlowPrompt.END_CHAT
    g2 = FlowPrompt.end_chat()
    assert "call the end_chat tool" in g2 and "terminate_session" not in g2


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  ```json\n{"a": [1, 2]}\n```  ', {"a": [1, 2]}),
        ('```JSON\n{"a": 1}```', {"a": 1}),
        ("```\n[1, 2]\n```", [1, 2]),
        ("42", 42),
        ('"text"', "text"),
        ("null", None),
    ],
)
def test_u1_parse_json_strips_fences_and_parses(text: str, value: Any) -> None:
    assert parse_json(text) == value


@pytest.mark.parametrize(
    "text", ["", "What is your favourite colour?", "{'a': 1}", '{"a": 1', "NaN", '{"a": Infinity}']
)
def test_u1_parse_json_returns_none_for_what_is_not_json(text: str) -> None:
    assert parse_json(text) is None


def test_u1_parse_json_refuses_what_is_not_text() -> None:
    with pytest.raises(TypeError) as caught:
        parse_json({"a": 1})  # type: ignore[arg-type]
    assert str(caught.value) == (
        "parse_json() takes the model's reply text, got dict. A step with an output_schema "
        "already receives the validated object."
    )
