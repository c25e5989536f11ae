"""TravelFlow: a planner runs flight, hotel and activity searches as nested steps."""
