"""The flows ported from PicoFlow's other demos, and one offline provider for all demo flows.

``FlowEngine(PORTED_FLOWS + [HotelFlow], providers={"offline": offline_provider})`` runs every
demo without a network or a key: each flow's default model is ``"offline:<demo>"``.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from demo.basic.flow import BasicFlow
from demo.basic.offline import offline_provider as basic_model
from demo.hotel.offline_model import offline_provider as hotel_model
from demo.medical.flow import MedicalFlow
from demo.medical.offline import offline_provider as medical_model
from demo.travel.flow import TravelFlow
from demo.travel.offline import offline_provider as travel_model
from picoflow import Flow, ModelSpec

PORTED_FLOWS: list[type[Flow]] = [BasicFlow, MedicalFlow, TravelFlow]
_MODELS = {"hotel": hotel_model, "basic": basic_model, "medical": medical_model}
_MODELS["travel"] = travel_model


def offline_provider(spec: ModelSpec) -> BaseChatModel:
    """The provider factory behind every ``"offline:<demo>"`` model of the demo flows."""
    build = _MODELS.get(spec.name)
    if build is None:
        raise ValueError(
            f"No offline demo model 'offline:{spec.name}'; there are "
            f"{', '.join(f'offline:{name}' for name in _MODELS)}."
        )
    return build(spec)
