"""Understanding stay dates in a guest's sentence, deterministically, relative to an injected today.

Conventions (the same ones the LLM is told in ``StayCriteria``):

* "X to Y" (also "X - Y", "until", "through", "arriving X and leaving Y", "between X and Y") means
  check in on X and check out on Y: "June 9 to 11" is the nights of June 9 and 10. A check-out
  day without a month ("March 12, leaving the 15th") takes the check-in's month, or the next when
  it is not after the check-in; a month said once after the check-out ("the 3rd to the 6th of
  May") is the check-in's too.
* A lone day is one night: "June 3, June 5 and June 9 to 11" is June 3, June 5 and June 9–10.
* "X for N nights" (N in digits or one..fourteen, "a night", "a week", "a couple of nights").
* A missing year makes the date the next one to come: "March 14" said in December is next March
  (issue 25), and today itself is this year's. A date that comes after another in the sentence
  and would otherwise lie more than six months before it moves to the next year ("Dec 30 to Jan
  2"). A year written once ("July 1 - July 6, 2027") applies to the other dates of the sentence,
  and a date with a year that has passed is kept: the criteria validation reports it as past.
* A weekday written with its date ("Friday the 19th of February", "Saturday June 20th") is that
  one day, not two; when the weekday is not the date's, ``date_trouble`` says so and the
  model asks.
* Weekdays ("Friday", "this Friday", "next Friday") mean the first such day after today; as a
  check-out they mean the first such day after the check-in.
* Days counted from today are check-in days, never the stay's length: "in two weeks", "in 3
  days", "in a fortnight", "a week from today/tomorrow/Friday", "two weeks from now", "the day
  after tomorrow", "in a month" (the same day next month). A duration only ever says how long
  the stay is ("for a week from tomorrow" is seven nights from tomorrow; "a week from tomorrow
  for 2 nights" is two nights a week later).
* "Next week" checks in on the Monday of next week (and "the week after next" a week later): a
  guest who says only that gets a concrete stay they can correct, which reads better than one
  more question; with no length given it is one night, like any lone day. A weekday with it
  ("Wednesday next week", "next week on Wednesday") is that day of that week; "this time next
  week" is seven days from today; "the weekend after next" is a week after "next weekend", and
  "tomorrow and the day after" two nights.
* Impossible dates ("Feb 30") and reversed ranges make the whole answer None (not understood);
  ``date_trouble`` names the day that does not exist, so the model can say so.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass, replace
from datetime import date, timedelta

from demo.hotel.offline._text import NUMBER_WORDS, normalize
from demo.hotel.types import DateRange
from demo.reading.ranges import range_words

_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_TH = r"(?:st|nd|rd|th)?"
_COUNT = r"\d+|" + "|".join(NUMBER_WORDS) + r"|an?|a couple(?: of)?"
_DAYS = "|".join(_WEEKDAYS)
_WORDS = "|".join(NUMBER_WORDS)
_ABOUT = r"(?:about|around|roughly|approximately)\s+"
_SPAN = r"days?|weeks?|wks?|fortnights?|months?"
"""Units a check-in is counted in from today ("in 3 days", "a week from Friday")."""
_NOT_A_DAY = (
    rf"(?!\s*(?:/|-\d(?!\d?{_TH}\s+(?:of\s+)?(?:{_MONTH})\b)|\$|nights?|weeks?|beds?|queens?|kings?"
    r"|people|guests|adults|miles?|mi\b))"
)
"""What makes a number no bare day: a fraction, a count of nights, beds or miles, or the start
of a range of numbers ("3-4 nights") — unless that range ends on a day of a month ("10-14 July")."""

_MENTION = re.compile(
    # 2026-07-01
    rf"(?P<iso>\b(?P<iso_y>\d{{4}})-(?P<iso_m>\d{{1,2}})-(?P<iso_d>\d{{1,2}})\b)"
    # 7/1, 7/1/27, 7/1/2027 (but not "1/2 mile")
    rf"|(?P<slash>\b(?P<sl_m>\d{{1,2}})/(?P<sl_d>\d{{1,2}})(?:/(?P<sl_y>\d{{4}}|\d{{2}}))?\b"
    rf"(?!/|\s*mi))"
    # July 1, July 1st, July 1, 2027
    rf"|(?P<named>\b(?P<nm_m>{_MONTH})\.?\s+(?:the\s+)?(?P<nm_d>\d{{1,2}}){_TH}\b"
    rf"(?:,?\s+(?P<nm_y>\d{{4}}))?)"
    # 1 July, the 1st of July
    rf"|(?P<dayof>\b(?:the\s+)?(?P<do_d>\d{{1,2}}){_TH}\s+(?:of\s+)?(?P<do_m>{_MONTH})\b"
    rf"(?:,?\s+(?P<do_y>\d{{4}}))?)"
    # a week from today, 3 weeks from friday, two weeks from now
    # ("for two weeks from Friday" is a stay of two weeks, unless the nights are given after it)
    rf"|(?P<later>\b(?:in\s+|for\s+(?=[^.;]*\bnights?\b))?(?P<lt_n>{_COUNT})\s+"
    rf"(?P<lt_u>{_SPAN})\s+(?:from|after)\s+(?:(?P<lt_base>now|today|tonight|tomorrow)"
    rf"|(?:(?:next|this|coming)\s+)?(?P<lt_wd>{_DAYS}))\b)"
    # in two weeks, in 3 days, in a fortnight, in a week's time
    # ("in about two weeks" is that day; "in a week or two" is too vague: it gets a question)
    rf"|(?P<ahead>(?<!check )(?<!check-)(?<!checking )\bin\s+(?:{_ABOUT})?(?P<in_n>{_COUNT})\s+"
    rf"(?P<in_u>{_SPAN})\b(?:'s?)?(?:\s+time\b)?"
    rf"(?!\s+(?:earlier|later|sooner|before|after|or\s+(?:\d|{_WORDS})))"
    r")"
    # the day after tomorrow, this time next week
    r"|(?P<day_after>\b(?:the\s+)?day after tomorrow\b|\bthis time next week\b)"
    # next week, Wednesday next week, next week on Wednesday, the week after next
    rf"|(?P<next_week>\b(?:(?P<nw_before>{_DAYS})\s+(?:of\s+|in\s+)?(?:the\s+)?)?"
    rf"(?:(?:the\s+)?week after next|next week(?!-?end))"
    rf"(?:,?\s+(?:on\s+|from\s+)?(?P<nw_after>{_DAYS}))?\b)"
    # today, tonight, tomorrow
    r"|(?P<relative>\b(?:today|tonight|tomorrow)\b)"
    # Friday, this Friday, next Friday
    rf"|(?P<weekday>\b(?:(?:next|this|coming|this coming)\s+)?(?P<wd>{_DAYS})\b)"
    # for 5 nights, two nights, a week
    rf"|(?P<duration>\b(?:for\s+)?(?P<count>{_COUNT})[\s-]+(?P<unit>nights?|weeks?|wks?)\b)"
    # a bare day continuing a date: "July 1 to the 6th", "June 9 to 11"
    rf"|(?P<bare>\b(?:the\s+)?(?P<bare_d>\d{{1,2}}){_TH}\b{_NOT_A_DAY}(?:,?\s+(?P<bare_y>\d{{4}}))?)"
)
"""Every way a date or a duration is written; scanned left to right."""

_RANGE_GAP = re.compile(
    r"(?:^|\s)(?:-|to|until|till|through|thru)(?:\s|$)|\bleav|\bcheck(?:ing)?[ -]?out|\bdepart"
    r"|(?:^|\s)out(?:\s+on)?\s*$"
)
"""Text between two dates that makes them check-in and check-out rather than two separate days."""

_CONTINUATION_GAP = re.compile(
    r"^[\s,]*(?:-|to|until|till|through|thru|and|&|or)?[\s,]*$"
    r"|^[\s,]*(?:-\s*)?(?:and\s+)?(?:(?:we|i)\s+)?(?:leav\w*|depart\w*|check(?:ing)?[ -]?out|out)"
    r"(?:\s+(?:on|by))?\s*$"
)
"""What may separate a bare day from the date it continues ("June 9 to 11", "June 3, 5"), and
a check-out word before a bare day ("June 12, leaving the 15th", "and we leave on the 2nd")."""
_LEADING_GAP = re.compile(r"^\s*(?:-|to|until|till|through|thru)\s*$")
"""What may separate a bare check-in day from a check-out date with its month ("the 3rd to the
6th of May"): the month is said once, for both."""


class DateTrouble(ValueError):
    """A date the guest wrote that cannot be: "Feb 30", or "Monday the 19th" on a Friday."""


def _calendar_day(year: int, month: int, day: int) -> date:
    """``date(year, month, day)``, or ``DateTrouble`` naming the day that does not exist."""
    try:
        return date(year, month, day)
    except ValueError:
        if not 1 <= month <= 12 or day < 1:
            raise DateTrouble("That is no date I know") from None
        leap = f" in {year}" if (month, day) == (2, 29) else ""
        raise DateTrouble(f"There is no {_MONTH_NAMES[month - 1].title()} {day}{leap}") from None


@dataclass(frozen=True)
class _Mention:
    """One date-like piece of the sentence, not yet resolved to a calendar date."""

    kind: str  # "date" | "day" | "relative" | "weekday" | "duration"
    start: int
    end: int
    month: int = 0
    day: int = 0
    year: int | None = None
    offset: int = 0  # days after today, or after the weekday ("a week from Friday")
    months: int = 0  # calendar months after that ("in a month": the same day next month)
    weekday: int = 0
    nights: int = 0
    said_weekday: int | None = None  # "Friday the 19th": the weekday the guest gave the date


def _year(token: str | None) -> int | None:
    if token is None:
        return None
    return 2000 + int(token) if len(token) == 2 else int(token)


def _month(token: str) -> int:
    return _MONTHS.index(token[:3]) + 1


def _nights(count: str, unit: str) -> int:
    """``count`` units in days: nights and days are one, weeks seven, fortnights fourteen."""
    number = {"a": 1, "an": 1}.get(count) or NUMBER_WORDS.get(count)
    if number is None:
        number = 2 if count.startswith("a couple") else int(count)
    return number * {"w": 7, "f": 14}.get(unit[0], 1)


def _ahead(count: str, unit: str) -> dict[str, int]:
    """``offset`` days or ``months`` months: "a month" is the same day next month, not 30 days."""
    if unit.startswith("month"):
        return {"months": _nights(count, "night")}
    return {"offset": _nights(count, unit)}


def _counted(kind: str, g: dict[str, str | None], span: dict[str, int]) -> _Mention:
    """A check-in counted from today or from a weekday ("in 3 days", "a week from Friday")."""
    if kind == "ahead":
        return _Mention("relative", **span, **_ahead(g["in_n"] or "", g["in_u"] or ""))
    if kind == "day_after":
        return _Mention("relative", **span, offset=2 if "tomorrow" in (g["day_after"] or "") else 7)
    if kind == "next_week":  # the first Monday after today (or a week later), plus the weekday
        day = g["nw_before"] or g["nw_after"]
        offset = (_WEEKDAYS.index(day) if day else 0) + 7 * ("after" in (g["next_week"] or ""))
        return _Mention("weekday", **span, offset=offset)
    ahead = _ahead(g["lt_n"] or "", g["lt_u"] or "")
    if g["lt_wd"]:
        return _Mention("weekday", **span, weekday=_WEEKDAYS.index(g["lt_wd"]), **ahead)
    ahead["offset"] = ahead.get("offset", 0) + (g["lt_base"] == "tomorrow")
    return _Mention("relative", **span, **ahead)


def _mention(match: re.Match[str]) -> _Mention | None:
    """Turn one regex match into a mention (None for "7/1"-like text that is no date)."""
    g, kind = match.groupdict(), match.lastgroup
    span = {"start": match.start(), "end": match.end()}
    if kind == "iso":
        return _Mention("date", **span, month=int(g["iso_m"]), day=int(g["iso_d"]),
                        year=int(g["iso_y"]))  # fmt: skip
    if kind == "slash":
        if not 1 <= int(g["sl_m"]) <= 12:
            return None  # "24/7 front desk"
        return _Mention("date", **span, month=int(g["sl_m"]), day=int(g["sl_d"]),
                        year=_year(g["sl_y"]))  # fmt: skip
    if kind in ("named", "dayof"):
        prefix = "nm" if kind == "named" else "do"
        return _Mention("date", **span, month=_month(g[f"{prefix}_m"]),
                        day=int(g[f"{prefix}_d"]), year=_year(g[f"{prefix}_y"]))  # fmt: skip
    if kind in ("ahead", "later", "day_after", "next_week"):
        return _counted(kind, g, span)
    if kind == "relative":
        return _Mention("relative", **span, offset=1 if match.group() == "tomorrow" else 0)
    if kind == "weekday":
        return _Mention("weekday", **span, weekday=_WEEKDAYS.index(g["wd"]))
    if kind == "duration":
        return _Mention("duration", **span, nights=_nights(g["count"], g["unit"]))
    return _Mention("day", **span, day=int(g["bare_d"]), year=_year(g["bare_y"]))


def _scan(text: str) -> list[_Mention]:
    """All mentions in order; a bare day only counts right after a date ("to the 6th")."""
    found: list[_Mention] = []
    leading: _Mention | None = None  # a bare day no date came before: maybe one comes after
    for match in _MENTION.finditer(text):
        mention = _mention(match)
        if mention is None:
            continue
        if mention.kind == "day" and not _continues(found, text, mention):
            leading = mention
            continue
        if leading is not None and _leads_into(leading, mention, text):
            found.append(_with_month_of(leading, mention))
        leading = None
        if _names_its_weekday(found, text, mention):
            weekday = found.pop()
            mention = replace(mention, start=weekday.start, said_weekday=weekday.weekday)
        found.append(mention)
    return found


_WEEKDAY_GAP = re.compile(r"^[\s,]*(?:on\s+)?$")


def _names_its_weekday(found: list[_Mention], text: str, mention: _Mention) -> bool:
    """A plain weekday right before a date ("Friday the 19th of February") names that date."""
    if mention.kind != "date" or not found:
        return False
    last = found[-1]
    plain = last.kind == "weekday" and last.offset == 0 and last.months == 0
    words = text[last.start : last.end].split()
    return plain and len(words) == 1 and bool(_WEEKDAY_GAP.match(text[last.end : mention.start]))


def _leads_into(day: _Mention, mention: _Mention, text: str) -> bool:
    """Whether a bare ``day`` is the check-in of the dated ``mention`` ("the 3rd to May 6")."""
    return mention.kind == "date" and bool(_LEADING_GAP.match(text[day.end : mention.start]))


def _with_month_of(day: _Mention, checkout: _Mention) -> _Mention:
    """The bare check-in ``day`` in the check-out's month, or the month before when its day is
    later ("the 28th to the 2nd of August" starts July 28)."""
    year = day.year if day.year is not None else checkout.year
    month = checkout.month
    if day.day > checkout.day:
        month, year = (12, year - 1 if year else None) if month == 1 else (month - 1, year)
    return replace(day, kind="date", month=month, year=year)


def _continues(found: list[_Mention], text: str, mention: _Mention) -> bool:
    if not found or found[-1].kind not in ("date", "day"):
        return False
    return bool(_CONTINUATION_GAP.match(text[found[-1].end : mention.start]))


@dataclass
class _Resolver:
    """Turns mentions into dates: years, months of bare days, weekdays after an anchor."""

    today: date
    default_year: int
    year_written: bool = False  # a year in the sentence: it applies as written, past or not

    def resolve(self, mention: _Mention, anchor: date | None, is_end: bool = False) -> date:
        found = self._resolve(mention, anchor, is_end)
        said = mention.said_weekday
        if said is not None and found.weekday() != said:
            raise DateTrouble(
                f"{found:%b} {found.day}, {found.year} is a {_WEEKDAYS[found.weekday()].title()},"
                f" not a {_WEEKDAYS[said].title()}"
            )
        return found

    def _resolve(self, mention: _Mention, anchor: date | None, is_end: bool) -> date:
        if mention.kind == "relative":
            return _plus_months(self.today + timedelta(days=mention.offset), mention.months)
        if mention.kind == "weekday":  # a shifted one ("a week from Friday") counts from today
            shifted = mention.offset != 0 or mention.months != 0
            base = anchor if is_end and anchor is not None and not shifted else self.today
            days = (mention.weekday - base.weekday() - 1) % 7 + 1 + mention.offset
            return _plus_months(base + timedelta(days=days), mention.months)
        if mention.kind == "day":
            return self.bare_day(mention, anchor, is_end)
        if mention.year is not None:
            return _calendar_day(mention.year, mention.month, mention.day)
        if anchor is None:
            found = _calendar_day(self.default_year, mention.month, mention.day)
            if not self.year_written and found < self.today:  # the next one to come
                found = _calendar_day(self.default_year + 1, mention.month, mention.day)
            return found
        return _after(anchor, mention.month, mention.day)

    def bare_day(self, mention: _Mention, anchor: date | None, is_end: bool) -> date:
        if anchor is None:
            raise ValueError("a bare day needs a month")
        year = mention.year if mention.year is not None else anchor.year
        found = _calendar_day(year, anchor.month, mention.day)
        if is_end and found <= anchor:  # "Jan 30 to the 2nd" → Feb 2
            month = anchor.month % 12 + 1
            found = _calendar_day(year + (month == 1), month, mention.day)
        return found


def _plus_months(day: date, months: int) -> date:
    """The same day ``months`` later, or that month's last day ("a month from Jan 31")."""
    index = day.month - 1 + months
    year, month = day.year + index // 12, index % 12 + 1
    return _calendar_day(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _after(anchor: date, month: int, day: int) -> date:
    """The date with this month/day in the anchor's year, or the next year if it wrapped around."""
    found = _calendar_day(anchor.year, month, day)
    if found < anchor - timedelta(days=183):
        found = _calendar_day(anchor.year + 1, month, day)
    return found


def _on_or_before(anchor: date, month: int, day: int) -> date:
    """The latest date with this month/day not after ``anchor`` (start year from the end's year)."""
    found = _calendar_day(anchor.year, month, day)
    return found if found <= anchor else _calendar_day(anchor.year - 1, month, day)


def _default_year(mentions: list[_Mention], today: date) -> int:
    """A year written once in the sentence applies to the others; otherwise the current year
    (``_Resolver`` moves a date that has passed to the next)."""
    years = {m.year for m in mentions if m.year is not None}
    return years.pop() if len(years) == 1 else today.year


def _is_range(text: str, first: _Mention, second: _Mention) -> bool:
    if second.kind == "duration":
        return False
    gap = text[first.end : second.start]
    between = re.search(r"\bbetween\s*$", text[: first.start]) and gap.strip() == "and"
    return bool(_RANGE_GAP.search(gap) or between)


def _range(
    text: str, first: _Mention, second: _Mention, resolver: _Resolver, anchor: date | None
) -> DateRange:
    """Check-in ``first``, check-out ``second``; a year given only on the check-out applies back."""
    if first.kind == "date" and first.year is None and second.kind == "date" and second.year:
        end = resolver.resolve(second, None)
        return DateRange(start=_on_or_before(end, first.month, first.day), end=end)
    start = resolver.resolve(first, anchor)
    return DateRange(start=start, end=resolver.resolve(second, start, is_end=True))


def _assemble(text: str, mentions: list[_Mention], today: date) -> list[DateRange]:
    written = any(m.year is not None for m in mentions)
    resolver = _Resolver(today, _default_year(mentions, today), written)
    parts: list[DateRange] = []
    anchor: date | None = None
    index = 0
    while index < len(mentions):
        first = mentions[index]
        second = mentions[index + 1] if index + 1 < len(mentions) else None
        step, part = _part(text, first, second, resolver, anchor)
        if part is not None:
            parts.append(part)
            anchor = part.start
        index += step
    return sorted(parts, key=lambda part: (part.start, part.end))


def _part(
    text: str, first: _Mention, second: _Mention | None, resolver: _Resolver, anchor: date | None
) -> tuple[int, DateRange | None]:
    """The stay part starting at ``first`` and how many mentions it used."""
    if first.kind == "duration":
        if second is None or second.kind == "duration":  # a duration with no date: ignore it
            return 1, None
        start = resolver.resolve(second, anchor)  # "5 nights starting July 1"
        return 2, DateRange(start=start, end=start + timedelta(days=first.nights))
    if second is not None and second.kind == "duration":
        start = resolver.resolve(first, anchor)
        return 2, DateRange(start=start, end=start + timedelta(days=second.nights))
    if second is not None and _is_range(text, first, second):
        return 2, _range(text, first, second, resolver, anchor)
    return 1, DateRange.single(resolver.resolve(first, anchor))


_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_RELATIVE_MONTH = re.compile(r"\b(?:of\s+|in\s+)?(?P<which>next|this|the coming) month\b")
_LATER_WEEKEND = re.compile(r"\b(?:the\s+)?weekend after next\b")
"""The weekend a week after next weekend."""
_DAYS_OF_A_WEEK = re.compile(
    rf"\b(?P<a>{_DAYS})(?P<gap>\s*(?:-|to|through|thru|until|till)\s*)(?P<b>{_DAYS})"
    r"\s+(?:of\s+|in\s+)?(?P<week>(?:the\s+)?week after next|next week)\b"
)
"""Both days of "Friday to Sunday next week" are in next week: the week moves to the first."""
_AND_THE_DAY_AFTER = re.compile(r"\b(?P<day>today|tonight|tomorrow) and the (?:day|night) after\b")
"""Two nights: "tomorrow and the day after"."""
_WEEKEND = re.compile(
    r"\b(?:(?P<next>next)|this|the|over the|this coming) weekend\b(?!\s+(?:of|after|before)\b)"
)
_DAY_RANGE = re.compile(
    r"\b(?:(?:from|between)\s+(?:the\s+)?(?P<a>\d{1,2})(?:st|nd|rd|th)?"
    r"|(?:the\s+)?(?P<b>\d{1,2})(?:st|nd|rd|th))"
    r"(?=\s*(?:-|to|and|until|till|through|thru)\s*(?:the\s+)?\d{1,2}(?:st|nd|rd|th)?\b"
    r"(?!\s*(?:nights?|beds?|miles?|mi\b|people|guests|\$)))"
)
_ORDINAL_DAY = re.compile(r"\b(?:on\s+|from\s+|the\s+)+(?P<c>\d{1,2})(?:st|nd|rd|th)\b(?!\s+of\b)")


_ABBREVIATED = {
    "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday",
    "thu": "thursday", "thur": "thursday", "thurs": "thursday", "fri": "friday",
    "sat": "saturday", "sun": "sunday",
}  # fmt: skip
_ABBR = "|".join(sorted(_ABBREVIATED, key=len, reverse=True))
_SHORT_DAY = re.compile(
    rf"\b(?:(?P<lead>next|this|on|from|until|till|by|arriving|leaving)\s+)?"
    rf"(?P<a>{_ABBR}|{_DAYS})\b\.?"
    rf"(?:(?P<gap>\s*(?:-|to|through|thru|until|till|and|&)\s*)(?P<b>{_ABBR}|{_DAYS})\b\.?)?"
    r"(?P<night>\s+nights?\b)?"
)
"""Short weekdays, only where they cannot be a word ("sat", "wed", "sun"): in a range ("fri-sun"),
after a word that asks for a day ("next fri", "on sat") or before "night" ("sat night")."""


def _full_weekdays(text: str) -> str:
    """``text`` with short weekdays written out, so the grammar only knows the full names."""

    def full(match: re.Match[str]) -> str:
        if not (match["lead"] or match["gap"] or match["night"]):
            return match.group(0)  # "we sat down", "a sun deck"
        lead = f"{match['lead']} " if match["lead"] else ""
        end = f"{match['gap']}{_ABBREVIATED.get(match['b'], match['b'])}" if match["gap"] else ""
        day = _ABBREVIATED.get(match["a"], match["a"])
        return f"{lead}{day}{end}{match['night'] or ''}"

    return _SHORT_DAY.sub(full, text)


_PER_NIGHT = re.compile(
    r"(?:\$\s?\d[\d,]*|\d{2}[\d,]*)(?:\.\d+)?\s*(?:dollars|bucks|usd)?\s*(?:a|per|/|each)\s*night"
)
"""A price per night ("$180 a night") is no one-night stay."""


def _spaces(match: re.Match[str]) -> str:
    return " " * len(match.group(0))


def _with_month(text: str, today: date) -> str:
    """Day numbers without a month get one; "this weekend" becomes Friday to Sunday.

    "The 3rd to the 7th" is in this month, or in the next when that day has passed; "next
    month" says which month it is.
    """
    this = "today to sunday" if today.weekday() in (4, 5) else "friday to sunday"
    text = _LATER_WEEKEND.sub("a week from next friday to sunday", text)
    text = _DAYS_OF_A_WEEK.sub(r"\g<a> \g<week>\g<gap>\g<b>", text)
    text = _AND_THE_DAY_AFTER.sub(r"\g<day> for 2 nights", text)
    text = _WEEKEND.sub(lambda m: "next friday to sunday" if m["next"] else this, text)
    month = None
    relative = _RELATIVE_MONTH.search(text)
    if relative:
        month = today.month + (0 if relative["which"] == "this" else 1)
        text = text[: relative.start()] + " " + text[relative.end() :]
    if re.search(rf"\b(?:{_MONTH})\b(?!\s+(?:i|we|you)\b)|\d/\d|\d-\d\d?-", text):
        return text
    found = _DAY_RANGE.search(text) or _ORDINAL_DAY.search(text)
    if found is None:
        return text
    group = next(g for g in ("a", "b", "c") if found.groupdict().get(g))
    day = int(found[group])
    if month is None:
        month = today.month if day >= today.day else today.month + 1
    name = _MONTH_NAMES[(month - 1) % 12]
    year = today.year + (month - 1) // 12
    insert = f" of {name}" + (f" {year}" if year != today.year else "")
    return (
        text[: found.end(group)]
        + _suffix(day)
        + insert
        + text[found.end(group) :].removeprefix(_suffix_in(text, found.end(group)))
    )


def _suffix(day: int) -> str:
    return "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _suffix_in(text: str, at: int) -> str:
    found = re.match(r"st|nd|rd|th", text[at : at + 2])
    return found.group(0) if found else ""


def parse_dates(text: str, today: date) -> list[DateRange] | None:
    """The stay described in ``text`` as check-in/check-out ranges, or None if no dates are given.

    Dates that have passed are returned as written (validation reports them); impossible dates
    and reversed ranges give None.
    """
    said = _full_weekdays(normalize(range_words(text)))
    normalized = _with_month(_PER_NIGHT.sub(_spaces, said), today)
    mentions = _scan(normalized)
    if not any(m.kind != "duration" for m in mentions):
        return None
    try:
        parts = _assemble(normalized, mentions, today)
    except ValueError:  # includes pydantic.ValidationError for a reversed range
        return None
    return parts or None


def date_trouble(text: str, today: date) -> str | None:
    """Why the dates of ``text`` cannot be read, when a day does not exist or a weekday is not
    the date's ("There is no February 30"); None otherwise."""
    said = _full_weekdays(normalize(range_words(text)))
    normalized = _with_month(_PER_NIGHT.sub(_spaces, said), today)
    try:
        _assemble(normalized, _scan(normalized), today)
    except DateTrouble as trouble:
        return str(trouble)
    except ValueError:
        return None
    return None


_ONE_NIGHT = re.compile(r"\bnight\b|\btonight\b|\bovernight\b")


def says_how_long(text: str) -> bool:
    """Whether ``text`` gives the stay's length ("for 3 nights", "a week", "tomorrow night").

    A correction that gives none moves the stay and keeps its length.
    """
    normalized = normalize(text)
    mentions = _scan(normalized)
    return any(m.kind == "duration" for m in mentions) or bool(_ONE_NIGHT.search(normalized))


def strip_dates(text: str) -> str:
    """``text`` normalised with its dates blanked out, so "July 20 to 25" is not read as a budget.

    Durations stay: "150 a night" is a price, and units already keep "5 nights" from being one.
    """
    normalized = _full_weekdays(normalize(text))
    for mention in reversed([m for m in _scan(normalized) if m.kind != "duration"]):
        normalized = (
            normalized[: mention.start]
            + " " * (mention.end - mention.start)
            + normalized[mention.end :]
        )
    return normalized
