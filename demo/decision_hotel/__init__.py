"""DecisionHotelFlow: PicoFlow's decision-step hotel demo, ported (research §3)."""
