"""The flows ported from PicoFlow's other demos, and one offline provider for all demo flows.

``FlowEngine(PORTED_FLOWS + [HotelFlow], providers={"offline": offline_provider})`` runs every
demo without a network or a key: each flow's default model is ``"offline:<demo>"``, and a demo
with more than one model (a step's own, a decision model) names them ``"offline:<demo>-<role>"``.
The decision demos need no decision provider of their own: their steps name their decision
model, which the engine builds with this same provider (docs/decisions.md).
"""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.language_models import BaseChatModel

from demo.basic.flow import BasicFlow
from demo.basic.offline import offline_provider as basic_model
from demo.benefits.flow import EmployeeBenefitsFlow
from demo.benefits.offline import offline_provider as benefits_model
from demo.decision_hotel.flow import DecisionHotelFlow
from demo.decision_hotel.offline import offline_provider as decision_hotel_model
from demo.decision_support.flow import DecisionSupportFlow
from demo.decision_support.offline import offline_provider as decision_support_model
from demo.hotel.offline_model import offline_provider as hotel_model
from demo.insurance.flow import HomeInsuranceQuoteFlow
from demo.insurance.offline import offline_provider as insurance_model
from demo.medical.flow import MedicalFlow
from demo.medical.offline import offline_provider as medical_model
from demo.travel.flow import TravelFlow
from demo.travel.offline import offline_provider as travel_model
from picoflow import Flow, ModelSpec

PORTED_FLOWS: list[type[Flow]] = [
    BasicFlow,
    MedicalFlow,
    TravelFlow,
    DecisionHotelFlow,
    DecisionSupportFlow,
    EmployeeBenefitsFlow,
    HomeInsuranceQuoteFlow,
]
_MODELS: dict[str, Callable[[ModelSpec], BaseChatModel]] = {
    "hotel": hotel_model,
    "basic": basic_model,
    "medical": medical_model,
    "travel": travel_model,
    "decision_hotel": decision_hotel_model,
    "decision_support": decision_support_model,
    "benefits": benefits_model,
    "insurance": insurance_model,
}


def offline_provider(spec: ModelSpec) -> BaseChatModel:
    """The provider factory behind every ``"offline:<demo>[-<role>]"`` model of the demos."""
    build = _MODELS.get(spec.name.partition("-")[0])
    if build is None:
        raise ValueError(
            f"No offline demo model 'offline:{spec.name}'; there are "
            f"{', '.join(f'offline:{name}' for name in _MODELS)} (and their '-<role>' models)."
        )
    return build(spec)
