"""HotelFlow: find and book a hotel in the Portland, Oregon area.

    ExploreStep ──capture_choices──▶ PresentStep ──chosen_hotel──▶ EndStep
         ▲                            │      ▲
         └────────search_again────────┘      │ resume_booking
                                  go_compare ▼
                                       CompareStep
    (every step but EndStep also has end_chat ──▶ EndStep)

The model is chosen once, at start-up: ``HotelFlow.using(model)`` returns the flow class bound
to it (the CLI does this with ``--model``); plain ``HotelFlow`` picks the offline demo model when
``OPENAI_API_KEY`` is unset and ``openai:gpt-4o-mini`` otherwise. The flow declares ``PROVIDERS``
(``Flow.providers``), so ``"offline:hotel"`` resolves on any engine.
"""

from __future__ import annotations

import os
from typing import ClassVar

from langchain_core.language_models import BaseChatModel

from demo.hotel.steps import CompareStep, ExploreStep, PresentStep
from picoflow import EndStep, Flow, ModelLike, ModelSpec, Step, sliding_window, turn_window

OFFLINE_MODEL = "offline:hotel"
OPENAI_MODEL = "openai:gpt-4o-mini"
EXPLORE_MEMORY = "hotel-explore"


def offline_provider(spec: ModelSpec) -> BaseChatModel:
    """The offline demo model, imported on first use: the flow does not depend on it.

    ``"offline:guest"`` is the scripted guest that plays simulated users in scenarios.
    """
    if spec.name == "guest":
        from demo.hotel.guest import guest_provider

        return guest_provider(spec)
    from demo.hotel.offline.model import offline_provider as provide

    return provide(spec)


_REASONING = ModelSpec("openai", "gpt-5.1", params={"reasoning": {"effort": "low"}})
STEP_MODELS: dict[str, ModelSpec] = {
    "ExploreStep": _REASONING,
    "PresentStep": ModelSpec("openai", OPENAI_MODEL.split(":")[1], params={"temperature": 0.5}),
    "CompareStep": _REASONING,
}
"""PicoFlow's HotelFlow step models (D4), used when the flow runs on ``OPENAI_MODEL``: the
criteria and the comparison on a reasoning model with low effort, the presentation on the
flow's own model (its params merge with the flow's) at temperature 0.5; EndStep keeps the flow's.
"""

PROVIDERS = {"offline": offline_provider}
"""Model providers the demo adds to picoflow's built-in ones: ``FlowEngine(providers=...)``."""


def default_model() -> str:
    """The offline demo model without an OpenAI key, else a small OpenAI model."""
    return OPENAI_MODEL if os.environ.get("OPENAI_API_KEY") else OFFLINE_MODEL


class HotelFlow(Flow):
    """A hotel-booking assistant: explore criteria, present hotels, compare, book."""

    chat_model: ClassVar[ModelLike | None] = None
    """The model of every step and of the summariser; None means ``default_model()``."""
    providers = PROVIDERS  # "offline:hotel" resolves on any engine, no providers= needed

    def __init__(self) -> None:
        """Summarise the long criteria conversation with the flow's own model."""
        super().__init__()
        # The criteria conversation can run long: past 8 messages, all but the newest 4 are
        # summarised (and archived): what the guest said matters there. Present and Compare
        # start afresh on entry, and their data (the list, the hotels compared) is in state, so
        # a guest who lingers there keeps only the last few exchanges (M11, issue 25): every
        # request stays bounded whatever the guest does.
        (
            self.get_memory()
            .set_summary_model(self.config_model())
            .set_summary_config(min_messages=8, recent_messages=4)
            .enable_summary(EXPLORE_MEMORY)
            .set_policy("PresentStep", turn_window(max_turns=8, keep_turns=4))
            .set_policy("CompareStep", turn_window(max_turns=8, keep_turns=4))
            .set_policy("end", sliding_window(max_messages=12, keep=4))
        )

    @classmethod
    def using(cls, model: ModelLike) -> type[HotelFlow]:
        """This flow bound to ``model``; it keeps the persisted flow name "HotelFlow"."""
        return type(cls.name, (cls,), {"name": cls.name, "chat_model": model})

    def config_model(self) -> ModelLike:
        """The model of every step and of the summariser."""
        return self.chat_model if self.chat_model is not None else default_model()

    def define_steps(self) -> list[Step]:
        """Explore, present, compare and end, in this order; on OpenAI, each its own model."""
        steps: list[Step] = [
            ExploreStep(self).use_memory(EXPLORE_MEMORY),
            PresentStep(self),
            CompareStep(self),
        ]
        if self.config_model() == OPENAI_MODEL:  # D4: PicoFlow's per-step models
            for step in steps:
                step.use_model(STEP_MODELS[step.name])
        return [*steps, EndStep(self).use_memory("end")]
