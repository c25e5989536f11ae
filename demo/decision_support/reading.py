"""How DecisionSupportFlow's offline models read a customer's words, as an LLM would.

`read(text)` says what one message is about: the documented topics it names (the evidence's
``docs`` keys: ``apiKey``, ``timeout``, ``webhook``, ``exports``), whether it is about billing,
whether it describes a failure of the customer's own or asks how or where, whether production
is blocked, whether it says the conversation is over, and whether it takes back what it said.
A correction mid-message ("billing, no wait, it's the webhooks") is read by its last part when
that part names something; a message that ends by taking itself back ("that's all. hmm, hold
on") names nothing, so no model acts on it. `follow_up` reads a message that names nothing of
its own ("still failing", "it's INV-200") in the light of the earlier requests, as the intake's
instructions say: prior requests only for follow-up context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from demo.reading import parts, withdrawn

TOPICS: dict[str, re.Pattern[str]] = {
    "apiKey": re.compile(
        r"\bapi[\s_-]*keys?\b|\bsecret[\s_-]*keys?\b|\baccess[\s_-]*keys?\b|\bapi[\s_-]*tokens?\b"
        r"|\bkeys?\b(?=.{0,30}\b(?:api|settings|create|generate|rotate|new)\b)|\bapikey"
        r"|\b(?:sk|pk|rk)_(?:live|test)_\w+|\bmy (?:secret |new |old )?key\b",
        re.I,
    ),
    "timeout": re.compile(
        r"time[\s-]?outs?\b|timed?[\s-]?out|timing[\s-]?out|\b504\b|takes? (?:too )?long"
        r"|\bhang(?:s|ing)?\b|\bslow\b|\bdeadline\b",
        re.I,
    ),
    "webhook": re.compile(
        r"web[\s-]?hooks?|signing[\s-]?secret|\bsignatures?\b|\bcallbacks?\b"
        r"|\bdeliver(?:y|ies|ed)\b",
        re.I,
    ),
    "exports": re.compile(
        r"\bexport(?:s|ed|ing)?\b|\bcsv\b|\breports\b|\breports? (?:page|tab|menu|section)\b"
        r"|\bdownload(?:ing)? (?:the |my |our )?"
        r"(?:data|reports?|usage)",
        re.I,
    ),
}
"""The evidence's documentation topics, by the words that name them."""

_BILLING = re.compile(
    r"\binvoices?\b|\binv[\s-]*\d+|\bcharg(?:e|ed|es|ing)\b|\bbill(?:ed|ing)?\b|\brefund"
    r"|\bsubscriptions?\b|\bpayments?\b|\bpaid\b|\bpay\b|\breceipts?\b|\bovercharg|\bprice\b"
    r"|\bcredit card\b|\bmoney back\b|\bcancel(?:l?ing)? (?:my |our |the )?(?:plan|account)",
    re.I,
)
_BILLING_DATA = re.compile(r"\bbilling (?:data|reports?|exports?)\b", re.I)
"""Billing words that name what an export holds, not a billing question ("export billing data")."""
_CODE_401 = re.compile(r"\b401s?\b")
INVOICE = re.compile(r"\bINV-\d+\b", re.I | re.A)
_FAILURE = re.compile(
    r"\berrors?\b|\bfail(?:s|ed|ing|ure|ures)?\b|\bbroken\b|\bnot working\b|\bdoesn'?t work"
    r"|\bisn'?t working|\bwon'?t\b|\bcan'?t\b|\bcannot\b|\bunable\b|\bdenied\b|\bforbidden\b"
    r"|\b40[0134]\b|\b50[0234]\b|timed?[\s-]?out|timing[\s-]?out|\btimeouts?\b|\bblocked\b"
    r"|\bstuck\b|\bcrash|\bexception\b|\brejected\b|\bunauthori[sz]ed\b|\bnot (?:being )?"
    r"(?:delivered|received|arriving|showing|coming)\b|\bstopped\b|\bdown\b|\boutage\b|\bbug\b"
    r"|\bkeeps? (?:failing|dropping|timing)|\bgreyed out\b|\bgrayed out\b|\bmissing\b"
    r"|\b(?:is|are|was|were|comes?|came) (?:out )?(?:empty|blank|corrupt(?:ed)?)\b"
    r"|\b(?:isn'?t|aren'?t|not|never|stopped|no longer) (?:receiving|getting|arriving|coming"
    r"|firing|loading|sending|showing|responding|accepted|valid)\b",
    re.I,
)
_OWN = re.compile(
    r"\b(?:i|i'm|im|i've|ive|my|we|we're|were|we've|our|us|me)\b|^\s*(?:still|keeps?|getting)\b",
    re.I,
)
_QUESTION = re.compile(
    r"^\W*(?:so\W+|and\W+|also\W+|ok(?:ay)?\W+|quick question\W+|hi\W+|hey\W+|hello\W+)*"
    r"(?:how|where|what|which|who|when|is there|are there|can i|can we|could i|could you|do you"
    r"|does|do i|do we|is|are|should)\b",
    re.I,
)
_PRODUCTION = re.compile(
    r"\bprod(?:uction)?\b|\blive\b|\bcustomers?\b|\busers?\b|\bcheckout\b|\bdeploy|\bgo[\s-]live"
    r"|\beverything\b|\ball (?:our|of our|requests|calls)\b",
    re.I,
)
_BLOCKED = re.compile(
    r"\bblocked\b|\bblocking\b|\bdown\b|\boutage\b|\bcan'?t\b|\bcannot\b|\bunable\b|\bstopped\b"
    r"|\bfail(?:s|ing|ed)?\b|\bbroken\b|\bnot working\b|\bstuck\b|\btimed?[\s-]?out\b|\b50[0234]\b",
    re.I,
)
_URGENT = re.compile(
    r"\burgent(?:ly)?\b|\basap\b|\bemergency\b|\bcritical\b|\bright now\b|\bimmediately\b"
    r"|\bsev[\s-]?1\b|\bp1\b|\bhelp!",
    re.I,
)
_CLOSING = re.compile(
    r"\bthat'?s (?:all|it|everything)\b|\b(?:we'?re|i'?m|we are|i am|all) (?:done|set|good"
    r"|finished)\b"
    r"|\bno (?:more|other|further) questions?\b|\bnothing (?:else|more)\b|\bgood ?bye\b|\bbye\b"
    r"|\bclose (?:this|the) (?:chat|conversation|ticket)\b|\bend (?:the |this )?(?:chat|"
    r"conversation)\b|\bproblem solved\b|\b(?:that|it|this) (?:solved|fixed|answered|answers) "
    r"(?:it|everything|my question)\b|\bsorted\b|\bthat'?s (?:all )?i needed\b|\bcya\b"
    r"|\bsee you\b|\bhave a (?:good|nice|great) (?:one|day)\b|\ball good now\b|\bwe'?re good\b",
    re.I,
)
_NOT_CLOSING = re.compile(
    r"\b(?:don'?t|do not|not|never|isn'?t|aren'?t|before|until)\b[^.!?]{0,20}?\b(?:close|end"
    r"|done|finished|bye|goodbye|all|everything)\b",
    re.I,
)
"""A goodbye said not to be one: "don't close the ticket yet", "that's not all"."""
_RESOLVED = re.compile(r"\b(?:fixed|solved|resolved|sorted|works now|working now|all good)\b", re.I)
_THANKS = re.compile(
    r"^\W*(?:ok(?:ay)?|great|perfect|cool|awesome|nice|got it|understood|alright|all right)?\W*"
    r"(?:thanks?(?: a lot| so much| again)?|thank you(?: (?:so|very) much)?|thx|ty|cheers)?\W*$",
    re.I,
)
_ANCHOR = re.compile(
    r"\bapi\b|\bendpoint|\bsdk\b|\bclient\b|\bintegration|\brequests?\b|\bcalls?\b|\bserver\b"
    r"|\bnorthstar\b|\bworkspace\b|\bsettings\b|\bdashboard\b|\bconsole\b|\bapp\b|\bservice\b",
    re.I,
)
"""Words that place a failure in the product, though no documented topic is named."""
_REFERS = re.compile(
    r"\b(?:it|its|it'?s|that|this|they|them|those|still|again|same|next|now|then|what about"
    r"|how about|instead|anyway|as well)\b",
    re.I,
)
"""Words that point back at an earlier request ("still failing", "what happens next?")."""
REQUEST_ID = re.compile(
    r"\breq(?:uest)?[\s_-]*(?:id)?\s*(?:is|was|:|#|=)?\s*[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*", re.I
)


@dataclass(frozen=True)
class Reading:
    """What one request says (see the module docstring)."""

    text: str
    topics: tuple[str, ...] = ()
    billing: bool = False
    invoice: str | None = None
    failure: bool = False
    own_failure: bool = False
    question: bool = False
    production: bool = False
    blocked: bool = False
    urgent_words: bool = False
    closing: bool = False
    thanks: bool = False
    anchored: bool = False
    request_id: bool = False
    taken_back: bool = False
    asks: bool = False  # a question mark or a question word: something new is asked
    earlier: tuple[str, ...] = field(default=())

    def has_a_request(self) -> bool:
        """Whether it asks something or reports a problem: then no goodbye in it ends anything."""
        return self.asks or self.own_failure or self.billing or self.request_id

    def names_something(self) -> bool:
        """Whether it names a topic, billing, a product failure or a request ID of its own."""
        return bool(self.topics or self.billing or self.anchored or self.request_id)


def read(text: str) -> Reading:
    """What `text` says; a correction is read by its last part when that part names anything."""
    said = parts(text)
    if withdrawn(text):
        return Reading(text, taken_back=True)
    whole = _read(text)
    if len(said) > 1:
        last = _read(said[-1])
        if last.names_something() or last.closing:
            return replace(last, text=text)
    return whole


def _read(text: str) -> Reading:
    exports_billing = _BILLING_DATA.search(text) is not None
    topics = tuple(name for name, words in TOPICS.items() if words.search(text))
    billing = _BILLING.search(_BILLING_DATA.sub("", text)) is not None
    if exports_billing and "exports" not in topics:
        topics = (*topics, "exports")
    if not topics and _CODE_401.search(text):
        topics = ("webhook",)  # the evidence knows a 401 from webhooks only
    invoice = INVOICE.search(text)
    closing = _CLOSING.search(text) is not None and _NOT_CLOSING.search(text) is None
    # "that fixed the 401 errors, bye": a failure said to be over is no failure any more
    failure = _FAILURE.search(text) is not None and not (closing and _RESOLVED.search(text))
    question = _QUESTION.search(text) is not None or text.strip().endswith("?")
    own = failure and (_OWN.search(text) is not None or not question)
    return Reading(
        text=text,
        topics=topics,
        billing=billing or invoice is not None,
        invoice=invoice.group(0).upper() if invoice else None,
        failure=failure,
        own_failure=own,
        question=question,
        production=_PRODUCTION.search(text) is not None,
        blocked=_BLOCKED.search(text) is not None,
        urgent_words=_URGENT.search(text) is not None,
        closing=closing,
        thanks=_THANKS.match(text) is not None and bool(text.strip(" .!,")),
        anchored=_ANCHOR.search(text) is not None,
        request_id=REQUEST_ID.search(text) is not None,
        asks=question and not _only_closing_question(text),
    )


def _only_closing_question(text: str) -> bool:
    """ "That's all, can you close the ticket?" asks nothing new."""
    return _CLOSING.search(text) is not None and not any(w.search(text) for w in TOPICS.values())


def follow_up(latest: Reading, earlier: Sequence[str]) -> Reading:
    """`latest` with the topic of the newest earlier request it follows up, if it names none.

    "still failing" after a webhook problem is the webhook problem; "it's INV-200" names its
    own invoice and is read as it is. A closing, a taken-back message or one that names
    something stays as it is.
    """
    if latest.taken_back or latest.closing or latest.thanks or _names_own(latest):
        return latest
    if not (latest.failure or latest.request_id or _REFERS.search(latest.text)):
        return latest  # "write me a poem": a new request, not a follow-up
    for text in reversed(earlier):
        before = read(text)
        if before.topics or before.billing:
            return replace(
                latest,
                topics=before.topics,
                billing=before.billing,
                failure=latest.failure or before.failure,
                own_failure=latest.own_failure or before.own_failure,
                production=latest.production or before.production,
                blocked=latest.blocked or before.blocked,
                earlier=(text,),
            )
    return latest


def _names_own(reading: Reading) -> bool:
    return bool(reading.topics or reading.billing)
