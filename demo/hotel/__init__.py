"""HotelFlow: a hotel-booking assistant for the Portland, Oregon area.

The domain layer here (types, catalog, pricing, comparison chart, and the offline language
understanding) is independent of picoflow, so it can be tested and reused on its own; the
conversational flow is built on top of it.
"""
