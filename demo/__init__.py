"""Showcase applications built on picoflow (see ``demo.hotel``)."""
