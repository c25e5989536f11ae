"""DecisionSupportFlow's fixed texts and fictional evidence, exactly as PicoFlow's demo has them.

The evidence is all the flow knows (research: pico-decisions-and-later-demos.md section 4): four
documentation facts, two invoices and the assistant's policy. Drafts may say only what is here,
and the judge checks them against it. Key order is PicoFlow's, so the JSON the prompts and the
judge's facts carry reads as PicoFlow's ``JSON.stringify`` of the same object.
"""

from __future__ import annotations

from typing import Any

DECISION_SUPPORT_MEMORY = "decision-support"
"""The namespace both decision steps share: the customer's requests and the delivered answers."""

HANDOFF = (
    "I could not verify a reliable answer. Please contact Northstar support with your request ID "
    "or invoice number. No account changes have been made."
)
"""The fixed reply after a second rejection or any decision outage."""

COMPLETED = "Thanks for contacting Northstar support. This conversation is complete."
"""IntakeDecisionStep's `finish` text when the customer says the conversation is finished."""

SUPPORT_EVIDENCE: dict[str, Any] = {
    "product": "Northstar Cloud",
    "docs": {
        "apiKey": "Create API keys in Settings > API keys. Never share a secret key in chat.",
        "timeout": (
            "The API client default timeout is 30 seconds. Check request ID and service status "
            "before retrying. Retry only idempotent operations."
        ),
        "webhook": (
            "Webhook delivery is retried for 24 hours. A 401 response commonly indicates an "
            "invalid signing secret. Verify signatures on the receiving server."
        ),
        "exports": (
            "CSV exports are available in Reports > Export. Only workspace admins can export "
            "billing data."
        ),
    },
    "invoices": {
        "INV-100": {"amount": 49, "currency": "USD", "status": "paid", "duplicate": False},
        "INV-200": {"amount": 98, "currency": "USD", "status": "paid", "duplicate": True},
    },
    "policy": (
        "This assistant can explain invoices and request human review. It cannot issue refunds, "
        "cancel subscriptions, change access, or claim an action was performed."
    ),
}
"""PicoFlow's ``SUPPORT_EVIDENCE``: the only trusted facts (fictional)."""

FEEDBACK_UNSUPPORTED = "Remove unsupported claims or explicitly state what is unknown."
FEEDBACK_CONTRADICTION = "Correct contradictions and remove claims of unperformed account changes."
FEEDBACK_INCOMPLETE = "Answer the request or ask for the specific missing information."
FEEDBACK_UNCLEAR = "Give a clear, concrete next step."
"""The judge's feedback, in the order it is collected."""

ASK_FOR_VALID_INVOICE = "ask_for_valid_invoice"
HUMAN_REVIEW_REQUIRED = "human_review_required"
NO_DUPLICATE_RECORDED = "no_duplicate_recorded"
"""BillingPolicyStep's three outcomes: unknown or missing invoice, a duplicate, none recorded."""
