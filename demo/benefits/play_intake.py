"""The offline model of EligibilityStep, PreferencesStep and IneligibleBenefitsStep.

Each player replays the stage's messages in order (a later value corrects an earlier one),
leaves out a message that takes its choice back, and calls the stage's tool only once every
value is explicit; otherwise it asks for what is missing. It never completes a value on a
guess: a bare number is no employee ID (it is read back), a date that reads two ways is asked
again, and a diagnosis sets no care-use level.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from langchain_core.messages import AIMessage

from demo.benefits.heard import Heard, guard
from demo.benefits.reading import Ambiguous, dates_in, is_no, is_question, is_yes, wants_to_stop
from picoflow.testing import tool_call

_ID = re.compile(r"(?<![a-z0-9])e\s?[-–—_]?\s?(?P<digits>\d{3,6})(?!\d)", re.I)
_BARE_ID = re.compile(
    r"\b(?:employee\s+)?(?:id|number|#|no\.?|num)\s*(?:is\s+|:\s*|#\s*)?(?P<digits>\d{3,6})\b"
    r"|^\W*(?P<alone>\d{4})\W*$",
    re.I,
)
_YEAR = re.compile(r"(?<![\d/.-])(?P<year>20[2-3]\d)(?![\d/-]|\.\d)")
_NEXT_YEAR = re.compile(r"\b(?:next|upcoming|coming|following)\s+(?:plan\s+)?year\b", re.I)
_EVENTS = (
    ("open_enrollment", r"open[\s-]*enrol+(?:ment)?|annual\s+enrol+ment|\boe\b|open\s+season"),
    (
        "new_hire",
        r"new[\s-]*(?:hire|hier|hir|hrie|hiree)\b|newly\s+hired|\bhired\b|just\s+started|started\s+(?:work|working|my\s+"
        r"(?:new\s+)?job|here|at|on)|first\s+day|new\s+(?:employee|job|starter)|\bjoined\b|"
        r"start\s+date|\bonboard",
    ),
    (
        "qualifying_life_event",
        r"qualifying|life[\s-]*event|\bqle\b|married|wedding|marriage|had\s+a\s+(?:baby|child|"
        r"kid)|\bbaby\b|birth\s+of|gave\s+birth|adopt|divorc|lost\s+(?:my\s+|his\s+|her\s+|our\s+)?"
        r"(?:other\s+)?(?:coverage|insurance)|losing\s+(?:my\s+)?coverage|new\s+(?:baby|son|"
        r"daughter)|newborn|\bmoved\b|relocat|moving\s+to|new\s+(?:state|address|zip)",
    ),
)
_NEGATED = re.compile(r"(?:\bnot|n't|\bno)\s+(?:an?\s+|the\s+|really\s+)?$", re.I)
_DAY_ONLY = re.compile(r"\b(?:on\s+)?the\s+(?P<day>\d{1,2})(?:st|nd|rd|th)\b", re.I)
_DEFERS = re.compile(
    r"\byou\s+(?:pick|choose|decide)\b|\bup\s+to\s+you\b|\bwhatever\s+you\s+(?:think|want|"
    r"recommend|say)\b|\byour\s+call\b|\bdealer'?s\s+choice\b|\bsurprise\s+me\b|\bdon'?t\s+care\b",
    re.I,
)
HOLD = "No problem — nothing has been checked or submitted. Tell me when you're ready."


def defers(text: str) -> bool:
    """The employee leaves a choice to the assistant ("you pick", "up to you")."""
    return bool(_DEFERS.search(text))


def _day_only(text: str, today: date) -> date | None:
    """ "on the 28th": the most recent such day up to today (an event that happened)."""
    found = _DAY_ONLY.search(text)
    if found is None:
        return None
    day, cursor = int(found["day"]), today
    for _ in range(62):
        if cursor.day == day:
            return cursor
        cursor -= timedelta(days=1)
    return None


@dataclass
class Request:
    """The eligibility request as the employee's messages so far have shaped it."""

    employee_id: str | None = None
    bad_id: str | None = None  # "E-104": said, but not E- and four digits
    proposed_id: str | None = None  # a bare number read back as an ID
    year: int | None = None
    event: str | None = None
    event_date: str | None = None
    ambiguous: list[str] = field(default_factory=list)

    def read(self, text: str, today: date, last_ai: str) -> None:
        """Apply one part of what the employee said."""
        self._read_id(text, last_ai)
        spans: list[range] = []
        try:
            found = dates_in(text, today)
            self.ambiguous = []
        except Ambiguous as exc:
            found, self.ambiguous = [], exc.readings
        for at, day in found:
            spans.append(range(at, at + 10))
            self.event_date = day.isoformat()
        if not found and not self.ambiguous and (day_only := _day_only(text, today)):
            self.event_date = day_only.isoformat()
        for match in _YEAR.finditer(text):
            if not any(match.start() in span for span in spans):
                self.year = int(match["year"])
        if _NEXT_YEAR.search(text):
            self.year = today.year + 1
        event = _event_in(text)
        if event is not None:
            self.event = event

    def _read_id(self, text: str, last_ai: str) -> None:
        if self.proposed_id and is_yes(text):
            self.employee_id, self.proposed_id = self.proposed_id, None
            return
        if self.proposed_id and is_no(text):
            self.proposed_id = None
        matches = list(_ID.finditer(text))
        if matches:
            digits = matches[-1]["digits"]
            if len(digits) == 4:
                self.employee_id, self.bad_id = f"E-{digits}", None
            else:
                self.bad_id = f"E-{digits}"
            return
        bare = _BARE_ID.search(text)
        if bare and (bare["digits"] or "employee id" in last_ai.lower()):
            self.proposed_id = f"E-{bare['digits'] or bare['alone']}"

    def missing(self) -> list[str]:
        """What the request still needs, in the order to ask for it."""
        gaps = []
        if self.employee_id is None:
            gaps.append("your employee ID (format E-0000)")
        if self.year is None:
            gaps.append("the plan year")
        if self.event is None:
            gaps.append(
                "the enrollment event (open enrollment, new hire or a qualifying life event)"
            )
        elif self.event != "open_enrollment" and self.event_date is None:
            what = "hire date" if self.event == "new_hire" else "date of the event"
            gaps.append(f"the {what}")
        return gaps

    def call(self) -> AIMessage:
        """The eligibility check, with ``eventDate`` null for open enrollment."""
        when = None if self.event == "open_enrollment" else self.event_date
        return tool_call(
            "check_benefits_eligibility",
            employeeId=self.employee_id,
            planYear=self.year,
            eventType=self.event,
            eventDate=when,
        )


def _event_in(text: str) -> str | None:
    found: list[tuple[int, str]] = []
    for event, pattern in _EVENTS:
        for match in re.finditer(pattern, text, re.I):
            if not _NEGATED.search(text[max(0, match.start() - 14) : match.start()]):
                found.append((match.start(), event))
    return max(found)[1] if found else None


INTRO = (
    "Welcome to the Northstar Works benefits enrollment — a fictional 2027 demonstration. To "
    "start, please tell me your employee ID (format E-0000), the plan year, and your enrollment "
    "event: open enrollment, new hire, or a qualifying life event (with its date)."
)


def _spoken(iso: str) -> str:
    day = date.fromisoformat(iso)
    return f"{day:%B} {day.day}, {day.year}"


def eligibility(heard: Heard) -> AIMessage | str:
    """EligibilityStep's model: collect, then check in the same response."""
    if not heard.said:
        return INTRO
    early = guard(heard, "end_benefits_enrollment", HOLD)
    if early is not None:
        return early
    request = Request()
    for said in heard.kept():
        request.read(said.text, heard.today, heard.last_ai)
    return _ask_or_check(request, heard.said[-1].text)


def _ask_or_check(request: Request, final: str) -> AIMessage | str:
    if request.ambiguous:
        first, second = (_spoken(day) for day in request.ambiguous[:2])
        return f"Just to be sure about the date: do you mean {first} or {second}?"
    if request.bad_id is not None and request.employee_id is None:
        return (
            f"{request.bad_id} doesn't look like an employee ID: IDs are E- followed by four "
            "digits (E-0000). What is yours?"
        )
    if request.proposed_id is not None and request.employee_id is None:
        return f"Employee IDs have the format E-0000. Is yours {request.proposed_id}?"
    gaps = request.missing()
    if not gaps:
        return request.call()
    if len(gaps) == 3 and not is_question(final):
        return INTRO  # nothing of the request yet: a greeting, or small talk
    if defers(final):
        return f"I can't choose that for you. Please tell me {_join(gaps)}."
    return f"Thanks. Please tell me {_join(gaps)}."


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- preferences ---------------------------------------------------------------------------

_RX = re.compile(
    r"prescri|\brx\b|\bmeds?\b|medication|medicine|pills?|drugs?|refill|inhaler|insulin|"
    r"\btake\s+\w+\s+(?:every|daily|each|once|twice)",
    re.I,
)
_NETWORK = re.compile(
    r"network|any\s+doctor|my\s+own\s+doctor|specific\s+doctor|keep\s+my\s+doctor", re.I
)
_USE = (
    ("preventive_only", r"preventi|check-?ups?|physicals?|wellness|rarely|hardly|almost\s+never|"
     r"healthy|low\s+use|minimal|barely|once\s+a\s+year|annual\s+visit"),
    ("high", r"\bhigh\b(?!\s*[-\s]deductible)|a\s+lot|frequent|\boften\b|many\s+(?:visits|"
     r"appointments|doctor)|heavy|ongoing|specialists?|surgery|lots\s+of|constantly|\bweekly\b"),
    ("moderate", r"moderate|a\s+few\s+(?:visits|times|appointments)|some\s+visits|occasional|"
     r"average|medium|normal|now\s+and\s+then|sometimes|couple\s+(?:of\s+)?(?:visits|times)"),
)  # fmt: skip
_RX_USE = (
    ("none", r"\bno\b|\bnone\b|don'?t\s+(?:take|use|have)|not\s+on\s+any|\bzero\b|\bnever\b|"
     r"nothing"),
    ("regular", r"regular|daily|every\s+(?:day|month|morning|night)|monthly|ongoing|maintenance|"
     r"chronic|each\s+month|all\s+the\s+time|long[-\s]term"),
    ("occasional", r"occasional|sometimes|once\s+in\s+a\s+while|now\s+and\s+then|rarely|a\s+few|"
     r"seasonal|as\s+needed|here\s+and\s+there|once\s+or\s+twice"),
)  # fmt: skip
_IN_NETWORK = re.compile(
    r"in[-\s]?network(?:\s+(?:only|is\s+(?:fine|ok|okay|good|enough)|works|would\s+be\s+fine))?"
    r"|only\s+in[-\s]?network|don'?t\s+(?:need|care\s+about)\s+out[-\s]?of[-\s]?network|no\s+"
    r"(?:need\s+for\s+)?out[-\s]?of[-\s]?network",
    re.I,
)
_OUT_NETWORK = re.compile(
    r"(?<!don't need )(?<!no need for )(?<!no )out[-\s]?of[-\s]?network|flexib|any\s+doctor|"
    r"keep\s+my\s+(?:own\s+)?doctor|my\s+own\s+doctor",
    re.I,
)
_PRIORITIES = (
    ("lowest_payroll_cost", r"lowest\s+(?:payroll\s+)?(?:cost|premium|price)|cheap|"
     r"low(?:er|est)?\s+(?:premiums?|paycheck|payroll|monthly\s+cost)|least\s+expensive|"
     r"save\s+money|afford|"
     r"payroll\s+cost|lowest\s+cost|\bcost\b"),
    ("lower_deductible", r"deductible"),
    ("out_of_network_access", r"out[-\s]?of[-\s]?network\s+(?:access|coverage|care|benefits)"),
    ("hsa_savings", r"\bhsa\b|health\s+savings|tax[-\s]?(?:free|advantaged)|pre-?tax\s+savings"),
    ("prescription_coverage", r"(?:prescription|drug|rx|medication)\s+coverage|cover(?:age)?\s+"
     r"(?:for\s+)?(?:my\s+)?(?:meds|prescriptions|medications)"),
)  # fmt: skip
_CLAUSES = re.compile(r"[,;.!]\s*|\s+(?:and|but|plus|also)\s+", re.I)
_DIAGNOSIS = re.compile(
    r"diabet|cancer|asthma|pregnan|depress|anxiety|arthritis|hypertension|blood\s+pressure|"
    r"heart\s+(?:disease|condition)|surgery|insulin|chemo|therapy|diagnos|condition",
    re.I,
)


def _first(pairs: tuple[tuple[str, str], ...], text: str) -> str | None:
    return next((value for value, pattern in pairs if re.search(pattern, text, re.I)), None)


@dataclass
class Preferences:
    """The four broad preferences as said so far."""

    use: str | None = None
    rx: str | None = None
    network: str | None = None
    priorities: list[str] = field(default_factory=list)
    health_detail: bool = False

    def read(self, text: str) -> None:
        """Apply one part of what the employee said, clause by clause."""
        self.health_detail = self.health_detail or bool(_DIAGNOSIS.search(text))
        for clause in _CLAUSES.split(text):
            self._clause(clause)

    def _clause(self, clause: str) -> None:
        if not clause.strip():
            return
        wanted = [value for value, pattern in _PRIORITIES if re.search(pattern, clause, re.I)]
        if _RX.search(clause) and not re.search(r"coverage", clause, re.I):
            self.rx = _first(_RX_USE, clause) or self.rx
            return
        if _NETWORK.search(clause) and "out_of_network_access" not in wanted:
            if _IN_NETWORK.search(clause):
                self.network = "in_network_only"
            elif _OUT_NETWORK.search(clause):
                self.network = "out_of_network_flexibility"
            return
        if wanted:
            if "out_of_network_access" in wanted and self.network is None:
                self.network = "out_of_network_flexibility"
            self.priorities = list(dict.fromkeys([*self.priorities, *wanted]))[:5]
            return
        said = _DIAGNOSIS.sub(" ", clause)  # a diagnosis sets no level; the words about use do
        self.use = _first(_USE, said) or self.use

    def missing(self) -> list[str]:
        """The preferences still unknown, as the question names them."""
        gaps = [
            (self.use, "how much care you expect to use (preventive only, moderate or high)"),
            (self.rx, "how often you use prescriptions (none, occasional or regular)"),
            (self.network, "your network preference (in-network only, or out-of-network "
             "flexibility)"),
            (self.priorities or None, "your priorities (lowest payroll cost, lower deductible, "
             "out-of-network access, HSA savings, prescription coverage)"),
        ]  # fmt: skip
        return [question for value, question in gaps if value is None]


PREFERENCES_ASK = (
    "Next, a few broad preferences — no diagnoses or medication names needed. The plan fit is "
    "rule-based decision support. Please tell me {gaps}."
)


def preferences(heard: Heard) -> AIMessage | str:
    """PreferencesStep's model: the four preferences, then the capture."""
    hold = "No problem — nothing has been recorded. Tell me your preferences when you're ready."
    early = guard(heard, "end_preferences_enrollment", hold)
    if early is not None:
        return early
    chosen = Preferences()
    for said in heard.kept():
        chosen.read(said.text)
    gaps = chosen.missing()
    if not gaps:
        return tool_call(
            "capture_benefits_preferences",
            anticipatedUse=chosen.use,
            prescriptionUse=chosen.rx,
            networkPreference=chosen.network,
            priorities=chosen.priorities,
        )
    note = ""
    if chosen.health_detail:
        note = "You don't need to share diagnoses or medication names; broad levels are enough. "
    if heard.said and defers(heard.said[-1].text):
        note += "I can't choose these for you. "
    return note + PREFERENCES_ASK.format(gaps=_join(gaps))


# -- ineligible ----------------------------------------------------------------------------

REASONS = {
    "EMPLOYEE_NOT_FOUND": "the employee ID was not found in the records",
    "EMPLOYMENT_NOT_ACTIVE": "the employment record is not active",
    "MINIMUM_HOURS_NOT_MET": "the record does not meet the minimum weekly hours",
    "UNSUPPORTED_PLAN_YEAR": "that plan year is not supported in this demo",
    "OPEN_ENROLLMENT_CLOSED": "open enrollment is closed",
    "EVENT_DATE_REQUIRED": "an event date is required",
    "EVENT_WINDOW_CLOSED": "the event date is outside the enrollment window",
}
_ACK = re.compile(
    r"\b(?:ok(?:ay)?|understood|understand|got\s+it|fine|thanks|thank\s+you|noted|acknowledged?|"
    r"i\s+see|alright|all\s+right|makes\s+sense|will\s+do|sure|yes|yeah|yep)\b",
    re.I,
)


def explain_decision(decision: dict[str, Any]) -> str:
    """The reason codes, said neutrally, with the next step."""
    codes = decision.get("reasonCodes") or []
    reasons = "; ".join(f"{REASONS.get(code, code)} ({code})" for code in codes)
    deadline = decision.get("enrollmentDeadline")
    windows = {"OPEN_ENROLLMENT_CLOSED", "EVENT_WINDOW_CLOSED"}
    when = (
        f" The enrollment deadline on record is {deadline}."
        if deadline and windows & set(codes)
        else ""
    )
    return (
        f"Based on the eligibility rules, enrollment can't continue right now: {reasons}.{when} "
        "Nothing has been submitted. Please contact the fictional Northstar Works benefits team "
        "for a review. Could you acknowledge that you've read this?"
    )


def ineligible(heard: Heard) -> AIMessage | str:
    """IneligibleBenefitsStep's model: explain the codes, then close once acknowledged."""
    decision = heard.facts.get("ELIGIBILITY_DECISION") or {}
    if not heard.said:
        return explain_decision(decision)
    text = heard.said[-1].text
    if heard.withdrawn():
        return "Take your time. Could you acknowledge the result when you're ready?"
    if is_question(text) or not (_ACK.search(text) or wants_to_stop(text)):
        return (
            "I can only go by the result of the eligibility rules and can't make exceptions. "
            + explain_decision(decision)
        )
    return tool_call("finish_ineligible_benefits", acknowledged=bool(_ACK.search(text)))
