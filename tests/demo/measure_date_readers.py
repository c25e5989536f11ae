"""Measure date-reading libraries against the demos' two date grammars (issue 35, docs/demo.md).

Not a test (the libraries are not dependencies of picoflow or of its demo): install them, then
run it from the repository's root::

    .venv/bin/pip install dateparser timefhuman
    .venv/bin/python tests/demo/measure_date_readers.py

The lines are every one-turn line of HotelFlow's corpora whose effect is a stay
(``criteria dates=START..END``) and every one-turn TravelFlow plan with both dates, each read
with the day its corpus calls today. A library gets the same thin glue for both: the first two
dates it finds are the stay, else the first and "for N nights".
"""

from __future__ import annotations

import re
import sys
import time
import warnings
from collections.abc import Callable
from datetime import date, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from demo.hotel.offline.language import parse_dates  # noqa: E402
from demo.travel.reading import read_trip  # noqa: E402

HERE = Path(__file__).parent
HOTEL_TODAY, TRAVEL_TODAY = date(2026, 5, 15), date(2025, 5, 1)
_COUNT = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "a": 1}
_HOTEL = re.compile(
    r"^[\w-]+ \| (.+?) \| criteria .*dates=(\d{4}-\d\d-\d\d)\.\.(\d{4}-\d\d-\d\d)(?:;|$)"
)
_TRAVEL = re.compile(r"^[\w-]+ \| (.+?) \| plan (.*)$")

Case = tuple[str, str, date, date, date]  # demo, line, today, check-in, check-out
Stay = tuple[date, date] | None


def cases() -> list[Case]:
    """The lines with a known stay."""
    found: list[Case] = []
    for name in ("utterances", "hotel_tuning35"):
        for raw in (HERE / f"{name}.txt").read_text().splitlines():
            hit = _HOTEL.match(raw.strip())
            if hit and " // " not in hit[1]:
                start, end = date.fromisoformat(hit[2]), date.fromisoformat(hit[3])
                found.append(("hotel", hit[1], HOTEL_TODAY, start, end))
    for name in ("travel_heldout", "travel_tuning", "travel_tuning35"):
        for raw in (HERE / f"{name}.txt").read_text().splitlines():
            hit = _TRAVEL.match(raw.strip())
            if not hit or " // " in hit[1]:
                continue
            fields = dict(pair.split("=", 1) for pair in hit[2].split(";"))
            if "depart" in fields and "return" in fields:
                start, end = (date.fromisoformat(fields[k]) for k in ("depart", "return"))
                found.append(("travel", hit[1], TRAVEL_TODAY, start, end))
    return found


def hotel_grammar(text: str, today: date) -> Stay:
    found = parse_dates(text, today)
    return (found[0].start, found[-1].end) if found else None


def travel_grammar(text: str, today: date) -> Stay:
    trip = read_trip([text], today)
    return (trip.depart, trip.back) if trip.depart and trip.back else None


def _glue(days: list[date], text: str) -> Stay:
    if not days:
        return None
    if len(days) > 1 and days[1] > days[0]:
        return days[0], days[1]
    length = re.search(r"\b(\d+|one|two|three|four|five|six|seven|a)\s+(nights?|weeks?)\b", text)
    if length is None:
        return None
    count = int(length[1]) if length[1].isdigit() else _COUNT[length[1]]
    return days[0], days[0] + timedelta(days=count * (7 if length[2][0] == "w" else 1))


def with_dateparser(text: str, today: date) -> Stay:
    from dateparser.search import search_dates

    base = datetime(today.year, today.month, today.day)
    settings = {"RELATIVE_BASE": base, "PREFER_DATES_FROM": "future"}
    found = search_dates(text, languages=["en"], settings=settings) or []
    return _glue([when.date() for _, when in found], text.lower())


def with_timefhuman(text: str, today: date) -> Stay:
    from timefhuman import tfhConfig, timefhuman

    found = timefhuman(text, config=tfhConfig(now=datetime(today.year, today.month, today.day)))
    days: list[date] = []
    for item in found:
        items = item if isinstance(item, tuple | list) else (item,)
        days.extend(when.date() for when in items if isinstance(when, datetime))
    return _glue(days, text.lower())


def measure(reader: Callable[[str, date], Stay], every: list[Case]) -> str:
    reader(every[0][1], every[0][2])  # imports and first-call set-up are not timed
    both, check_in = {"hotel": 0, "travel": 0}, {"hotel": 0, "travel": 0}
    began = time.perf_counter()
    for demo, text, today, start, end in every:
        try:
            got = reader(text, today)
        except Exception:  # noqa: BLE001 - a reader that fails on a line reads it wrong
            got = None
        both[demo] += got == (start, end)
        check_in[demo] += got is not None and got[0] == start
    per_line = (time.perf_counter() - began) * 1000 / len(every)
    return (
        f"both ends right: hotel {both['hotel']}, travel {both['travel']}; check-in right: "
        f"hotel {check_in['hotel']}, travel {check_in['travel']}; {per_line:.2f} ms a line"
    )


def main() -> None:
    warnings.filterwarnings("ignore")
    every = cases()
    hotel = sum(case[0] == "hotel" for case in every)
    print(f"{len(every)} lines: {hotel} HotelFlow, {len(every) - hotel} TravelFlow")
    readers = {
        "HotelFlow's grammar": hotel_grammar,
        "TravelFlow's grammar": travel_grammar,
        "dateparser": with_dateparser,
        "timefhuman": with_timefhuman,
    }
    for name, reader in readers.items():
        print(f"{name:21} {measure(reader, every)}")


if __name__ == "__main__":
    main()
