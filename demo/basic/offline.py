"""The offline model of BasicFlow: rules that answer as a good LLM would, from what it is sent.

It is a `ScriptedChatModel` with a policy (a public test-kit class), so it enters the flow
through the engine's provider registry like any model: ``"offline:basic"``. It reads only the
messages (the system prompt included) and the names of the bound tools, which is all an LLM
behind an API would see: it learns which cities pass from the tool feedback, the favourites'
options from the JSON schema in the prompt, and the user's name from the date-of-birth prompt.
"""

from __future__ import annotations

import difflib
import json
import re
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from demo.basic.reading import Ambiguous, address_in, dates_in
from demo.reading import corrections
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel, structured, tool_call, tool_calls

__all__ = ["respond", "relay", "offline_provider"]


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    system = messages[0].text if messages and isinstance(messages[0], SystemMessage) else ""
    if tools == ["final_result"]:
        return structured(MOVIE_IDEA)
    for name, rule in _RULES.items():
        if name in tools:
            return rule(messages, tools, system)
    if "favoriteColor" in system:
        return _favorites(messages, system)
    if "historian" in system:
        return _president(_last_human(messages))
    return _closing(system)


def relay(feedback: str) -> str:
    """A tool's feedback, told to the user: its facts, without the instructions to the model."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", feedback) if s.strip()]
    facts = [s for s in sentences if not s.startswith(("Ask", "Call"))]
    return "Sorry: " + " ".join(facts or sentences)


# -- reading the conversation ------------------------------------------------------------------


def _last_human(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return str(message.text)
    return ""


def _just_said(messages: list[BaseMessage]) -> str:
    """The user's message when it is the newest one (the model answers it), else ""."""
    last = messages[-1] if messages else None
    return str(last.text) if last is not None and last.type == "human" else ""


def _fresh_results(messages: list[BaseMessage]) -> list[ToolMessage]:
    """The tool results at the end of the history (those the model has not answered yet)."""
    results: list[ToolMessage] = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, message)
    return results


def _calls(messages: list[BaseMessage], name: str) -> list[tuple[dict[str, Any], str]]:
    """Every call of tool `name` in the history with its result text."""
    results = {m.tool_call_id: str(m.text) for m in messages if isinstance(m, ToolMessage)}
    found = []
    for message in messages:
        for call in getattr(message, "tool_calls", None) or []:
            if call["name"] == name and call["id"] in results:
                found.append((call["args"], results[call["id"]]))
    return found


_END = re.compile(
    r"\b(bye|goodbye|quit|stop|exit|end (?:the|this)? ?chat|i'?m done|forget it|no thanks)\b",
    re.I,
)
_QUESTION = re.compile(r"\?\s*$|^\s*(why|what|how|do|does|is|are|can|which|who|where)\b", re.I)


def _settled(said: str) -> str:
    """What a message finally says, once its corrections are read (`demo.reading`)."""
    return corrections.bare(corrections.expand([said])[-1]) if said else said


def _wants_to_leave(said: str) -> bool:
    return bool(_END.search(said))


def _end(tools: list[str]) -> AIMessage:
    name = "terminate_session" if "terminate_session" in tools else "end_chat"
    return tool_call(name, prompt="Say goodbye to the user.")


# -- WeatherStep ---------------------------------------------------------------------------------

_ALIASES = (
    (re.compile(r"\bnew york(?: city)?\b|\bny(?:c| city)?\b", re.I), "NYC"),
    (re.compile(r"\blos angeles\b|\bl\.a\.?(?![\w])|\bla\b(?![\w'])", re.I), "LA"),
)
_KNOWN_CITIES = (
    "San Francisco", "San Diego", "San Jose", "Las Vegas", "New Orleans", "Salt Lake City",
    "Washington", "Chicago", "Miami", "Boston", "Denver", "Seattle", "Austin", "Houston",
    "Dallas", "Phoenix", "Philadelphia", "Atlanta", "Portland", "Detroit", "Nashville",
    "Orlando", "Minneapolis", "Baltimore", "Honolulu", "Anchorage", "Springfield", "London",
    "Paris", "Berlin", "Madrid", "Rome", "Tokyo", "Sydney", "Toronto", "Vancouver", "Dublin",
    "Amsterdam", "Lisbon", "Mexico City", "Beijing", "Shanghai", "Mumbai", "Delhi", "Cairo",
    "Moscow", "Istanbul", "Dubai", "Singapore", "Hong Kong", "Seoul", "Bangkok", "Rio",
)  # fmt: skip
_OTHER = re.compile(r"\b(" + "|".join(_KNOWN_CITIES) + r")\b", re.I)
_AFTER_IN = re.compile(r"\b(?:in|for)\s+([A-Z][a-z]{2,}(?: [A-Z][a-z]{2,})?)")
_NOT_PLACES = {
    "General", "Today", "Tomorrow", "The", "There", "Here", "Me", "Sure", "Weather", "Temperature",
    "Celsius", "Fahrenheit", "Town", "Advance",
}  # fmt: skip


def _cities(said: str) -> list[str]:
    """The cities the user names, in order: NYC and LA as the tool spells them, others as said."""
    found: list[tuple[int, str]] = []
    for alias, city in _ALIASES:
        found += [(m.start(), city) for m in alias.finditer(said)]
    for match in _OTHER.finditer(said):
        if not any(start == match.start() for start, _ in found):
            found.append((match.start(), match.group(1).title()))
    for match in _AFTER_IN.finditer(said):
        name = match.group(1)
        taken = any(abs(start - match.start(1)) < 3 for start, _ in found)
        if name not in _NOT_PLACES and not taken and not _ALIASES[0][0].match(name):
            found.append((match.start(1), name))
    names: list[str] = []
    for _, city in sorted(found):
        if city not in names:
            names.append(city)
    return names


def _weather(messages: list[BaseMessage], tools: list[str], system: str) -> AIMessage | str:
    results = _fresh_results(messages)
    if results:
        return _weather_feedback(messages, results)
    said = _just_said(messages)
    cities = _cities(said)
    if cities:
        return tool_calls(*[("get_weather", {"cityName": city}) for city in cities])
    if _wants_to_leave(said):
        return _end(tools)
    return "Which two cities would you like me to compare today's temperature for?"


def _weather_feedback(messages: list[BaseMessage], results: list[ToolMessage]) -> str:
    accepted = [args["cityName"] for args, text in _calls(messages, "get_weather") if text == "ok"]
    refused = [r for r in results if r.text != "ok"]
    have = ", ".join(dict.fromkeys(accepted))
    if refused:
        first = f"Sorry, {refused[0].text.rstrip('.')}."
        if have:
            return f"{first} I have {have}; which other city should I compare it with?"
        return f"{first} Which two cities would you like to compare?"
    return f"Got {have}. Which other city should I compare it with?"


# -- FavoritesStep -------------------------------------------------------------------------------

_ITEMS = {"color": "favoriteColor", "movie": "favoriteMovie", "season": "favoriteSeason"}
_ASK = {
    "color": "What is your favourite colour: {options}?",
    "movie": "What is your favourite movie?",
    "season": "And your favourite season: {options}?",
}
_LABELS = {
    "color": re.compile(r"\bcolou?r(?:\s+is|:)?\s+(?P<v>[a-z]+)", re.I),
    "movie": re.compile(
        r"\b(?:movie|film)(?:\s+is|:)?\s+(?P<v>[^,.;!?]+?)(?:\s*(?:[,.;!?]|\band\b)|$)", re.I
    ),
    "season": re.compile(r"\bseason(?:\s+is|:)?\s+(?P<v>[a-z]+)", re.I),
}
_SYNONYMS = {"fall": "autumn"}
_OTHER_COLORS = {"green", "yellow", "black", "purple", "orange", "pink", "grey", "gray", "brown"}
_FILLERS = re.compile(
    r"^(?:and|but|hmm+|um+|uh+|well|ok(?:ay)?|oh|so|wait|sorry|actually|definitely|"
    r"obviously|for sure|i guess|i think|i love|i like|i'd say|probably|maybe|please|my"
    r"|it's|its|is|fav(?:ou?rite)?)\b[\s,.:!-]*",
    re.I,
)
_TRAILING = re.compile(
    r"[\s,.:!-]*\b(?:obviously|for sure|i guess|i think|please|probably|maybe|then)$", re.I
)
_NEGATED = re.compile(r"\bnot\s+\w+", re.I)


def _options(system: str) -> dict[str, list[str]]:
    """The enums of the schema in the prompt (the model reads them there)."""
    start, end = system.find("{"), system.rfind("}")
    try:
        schema = json.loads(system[start : end + 1])
    except ValueError:
        return {}
    properties = schema.get("properties", {})
    return {item: properties.get(key, {}).get("enum", []) for item, key in _ITEMS.items()}


def _asked_item(text: str) -> str | None:
    for item, pattern in (("color", r"colou?r"), ("movie", r"movie|film"), ("season", r"season")):
        if re.search(pattern, text, re.I):
            return item
    return None


def _enum_value(word: str, choices: list[str], fuzzy: bool) -> str | None:
    word = _SYNONYMS.get(word.lower(), word.lower())
    if word in choices:
        return word
    if fuzzy and len(word) >= 4:
        close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
        return close[0] if close else None
    return None


def _answers_in(
    said: str, asked: str | None, options: dict[str, list[str]], known: dict[str, str]
) -> dict[str, str]:
    """The favourites a message gives, part by part: "alien, no wait, the matrix" is The
    Matrix (a later part corrects an earlier one), a part taken back gives nothing."""
    found: dict[str, str] = {}
    for part in corrections.expand([said]):
        if not corrections.withdrawn(part):
            base = {item: value for item, value in known.items() if item not in found}
            found.update(_read_answer(corrections.bare(part), asked, options, base))
    return found


def _read_answer(
    said: str, asked: str | None, options: dict[str, list[str]], known: dict[str, str]
) -> dict[str, str]:
    """The favourites one user message gives: labelled, enum words, or the answer to `asked`."""
    text = _NEGATED.sub(" ", said)  # "not blue, white": blue is taken back
    found, text = _labelled(text, options)
    rest: list[str] = []
    for segment in re.split(r"[,;]|\band\b|(?<=[a-z])\.\s", text):
        enums = _enums_in(segment, asked, options)
        found.update(enums)
        cleaned = _without_fillers(segment)
        if not enums and cleaned and cleaned.lower() not in _OTHER_COLORS:
            rest.append(cleaned)
    if "movie" not in found and "movie" not in known and rest:
        if asked == "movie" or len(found) + len(rest) > 1:
            found["movie"] = rest[0]
    return found


def _labelled(text: str, options: dict[str, list[str]]) -> tuple[dict[str, str], str]:
    """Answers given with their label ("movie: Alien"), and the text without them."""
    found: dict[str, str] = {}
    for item, pattern in _LABELS.items():
        for match in pattern.finditer(text):
            value = match.group("v").strip()
            if item != "movie":
                value = _enum_value(value, options.get(item, []), True) or ""
            if value:
                found[item] = value
                text = text.replace(match.group(0), " , ")
    return found, text


def _enums_in(segment: str, asked: str | None, options: dict[str, list[str]]) -> dict[str, str]:
    """Colour and season words of a segment; typos only in a short answer to that question."""
    words = segment.strip(" .!?:-").split()
    found: dict[str, str] = {}
    for word in words:
        for item in ("color", "season"):
            fuzzy = asked == item and len(words) <= 2
            enum = _enum_value(word.strip(".!?"), options.get(item, []), fuzzy)
            if enum:
                found[item] = enum
    return found


def _without_fillers(segment: str) -> str:
    cleaned = segment.strip(" .!?:-")
    while True:
        shorter = _TRAILING.sub("", _FILLERS.sub("", cleaned)).strip(" .!?:-")
        if shorter == cleaned:
            return cleaned
        cleaned = shorter


def _favorites(messages: list[BaseMessage], system: str) -> str:
    options = _options(system)
    known: dict[str, str] = {}
    asked: str | None = None
    question = False
    for message in messages[1:]:
        if message.type == "ai":
            asked = _asked_item(str(message.text))
        elif message.type == "human":
            said = str(message.text)
            question = bool(_QUESTION.search(said))
            if not question:
                known.update(_answers_in(said, asked, options, known))
    if len(known) == len(_ITEMS):
        return json.dumps({_ITEMS[item]: known[item] for item in _ITEMS})
    missing = next(item for item in _ITEMS if item not in known)
    ask = _ASK[missing].format(options=", ".join(options.get(missing, [])))
    if question:
        if asked in ("color", "season"):
            return f"You can choose {', '.join(options.get(asked, []))}. " + _ASK[asked].format(
                options=", ".join(options.get(asked, []))
            )
        return "Any movie you like, old or new. " + ask
    return ask


# -- NameStep ----------------------------------------------------------------------------------

_INTRO = re.compile(
    r"\b(?:my name is|my name's|name's|name is|i am|i'm|im|call me|it's|its|this is)\s+"
    r"(?P<name>[^,;!?]+)",
    re.I,
)
_CUT = re.compile(
    r"\s+(?:and|but|born|from|nice|thanks|thank|here|pls|plz|please|lol|haha|thx|ty|,)\b.*$",
    re.I,
)
_NAME_WORD = re.compile(r"^[A-Za-z][A-Za-z'.-]*$")
_NOT_NAMES = {
    "sorry", "typo", "hi", "hello", "hey", "yes", "no", "thanks", "nice", "to", "meet", "you",
    "i", "am", "is", "my", "name", "the", "and", "it", "its", "please", "ok", "okay", "sure",
    "a", "what", "why", "this", "for", "here", "mean", "actually", "wait", "continue", "oops",
    "fine", "well", "so", "me", "just", "born", "on", "in", "was", "of", "not", "i'm", "im",
    "it's", "name's", "call", "that's", "i'd", "do", "need", "want", "your", "we",
}  # fmt: skip
_CORRECTION = re.compile(r"\b(sorry|typo|i mean|actually|no wait|oops|correction)\b", re.I)


def _as_name(text: str) -> str | None:
    words = _CUT.sub("", text.strip()).strip(" .!").split()
    if not 1 <= len(words) <= 4 or not all(_NAME_WORD.match(w) for w in words):
        return None
    if any(w.lower().strip(".") in _NOT_NAMES for w in words):
        return None
    return " ".join(_capitalised(w) for w in words)


def _capitalised(word: str) -> str:
    if word != word.lower():
        return word  # as the user wrote it: McDonald, O'Brien
    return re.sub(r"(^|['-])([a-z])", lambda m: m.group(1) + m.group(2).upper(), word)


def _names_in(said: str) -> list[str]:
    found = [(m.start(), n) for m in _INTRO.finditer(said) if (n := _as_name(m.group("name")))]
    offset = 0
    for segment in re.split(r"[,;]", said):
        name = _as_name(segment)
        if name and not any(n == name for _, n in found):
            found.append((offset, name))
        offset += len(segment) + 1
    return [name for _, name in sorted(found)]


def _name(messages: list[BaseMessage], tools: list[str], system: str) -> AIMessage | str:
    results = _fresh_results(messages)
    if results:
        return relay(str(results[-1].text)) + " What name should I use?"
    whole = _just_said(messages)
    if whole and _wants_to_leave(whole):
        return _end(tools)
    said = _settled(whole)
    names = _names_in(said) if not _QUESTION.search(said) or _INTRO.search(said) else []
    said = whole
    if names:
        return tool_call("user_name", name=names[-1] if _CORRECTION.search(said) else names[0])
    if said and _QUESTION.search(said):
        return "I need your name to personalise the rest of this chat. What is your name?"
    return "Thanks! What is your name?"


# -- DOBStep -------------------------------------------------------------------------------------


def _dob(messages: list[BaseMessage], tools: list[str], system: str) -> AIMessage | str:
    results = _fresh_results(messages)
    arrived = bool(results) and all(r.name != "dob" for r in results)
    said = _last_human(messages) if arrived else _just_said(messages)
    user = re.search(r"date of birth of (.+?)\.", system.replace("\n", " "))
    who = user.group(1) if user and "{{" not in user.group(1) else ""
    try:
        dates = dates_in(_settled(said)) or dates_in(said)
    except Ambiguous as exc:
        return (
            f"{exc.args[0]} could be read two ways. Please enter your date of birth again with "
            "the month as a word, e.g. 3 April 1990."
        )
    if dates:
        born = dates[-1][1]
        if born < date.today():
            return tool_call("dob", year=born.year, month=born.month, day=born.day)
        return "That date is not in the past. Please enter your date of birth again."
    if not arrived and said and _wants_to_leave(said):
        return _end(tools)
    if not arrived and said and _QUESTION.search(said):
        return "It is part of the profile this demo collects. What is your date of birth?"
    return (
        f"Nice to meet you, {who}! What is your date of birth?"
        if who
        else ("What is your date of birth?")
    )


# -- AddressStep ---------------------------------------------------------------------------------


def _address(messages: list[BaseMessage], tools: list[str], system: str) -> AIMessage | str:
    results = _fresh_results(messages)
    arrived = bool(results) and all(r.name != "address" for r in results)
    if results and not arrived:
        return (
            "Sorry, that address was not accepted. Please give a US address as street, city, "
            "two-letter state and ZIP, e.g. 12 Main St, Springfield, IL 62701."
        )
    said = _last_human(messages) if arrived else _just_said(messages)
    if corrections.withdrawn(said):
        return "No problem: nothing is saved yet. Tell me your address when you are ready."
    found = address_in(_settled(said))
    if found:
        return tool_call("address", address=found)
    if not arrived and said and _wants_to_leave(said):
        return _end(tools)
    if not arrived and said and _QUESTION.search(said):
        return (
            "It is only kept in this demo's session. Please give it as street, city, state and "
            "ZIP, e.g. 12 Main St, Springfield, IL 62701."
        )
    if not arrived and said:
        return "I need a full address: street, city, state and ZIP. What is your address?"
    return "Thank you. What is your address?"


# -- InContextStep, PresidentStep, EndStep -------------------------------------------------------

MOVIE_IDEA = {
    "title": "The Last Signal from Europa",
    "genre": "Science Fiction",
    "releaseYear": 2027,
    "rating": 7.5,
    "summary": "Four students decode a message from beneath Europa's ice and must decide "
    "whether to answer it.",
}
PRESIDENTS = {
    1: "George Washington", 2: "John Adams", 3: "Thomas Jefferson", 4: "James Madison",
    5: "James Monroe", 6: "John Quincy Adams", 7: "Andrew Jackson", 8: "Martin Van Buren",
    9: "William Henry Harrison", 10: "John Tyler", 11: "James K. Polk", 12: "Zachary Taylor",
    13: "Millard Fillmore", 14: "Franklin Pierce", 15: "James Buchanan", 16: "Abraham Lincoln",
    17: "Andrew Johnson", 18: "Ulysses S. Grant", 19: "Rutherford B. Hayes",
    20: "James A. Garfield",
}  # fmt: skip


def _president(said: str) -> str:
    found = re.search(r"(\d+)(?:st|nd|rd|th)", said)
    number = int(found.group(1)) if found else 0
    if number in PRESIDENTS:
        return f"The {found.group(0)} President of the United States was {PRESIDENTS[number]}."  # type: ignore[union-attr]
    return "Which president would you like to know about? Give me the number, e.g. 16th."


def _closing(system: str) -> str:
    return "Thank you for chatting with me. As you asked, our conversation ends here. Goodbye!"


_RULES: dict[str, Any] = {
    "get_weather": _weather,
    "user_name": _name,
    "dob": _dob,
    "address": _address,
}


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:basic"``."""
    if spec.name != "basic":
        raise ValueError(
            f"The BasicFlow offline provider has one model, 'offline:basic'; got "
            f"'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
