"""BasicFlow: PicoFlow's feature tour (logic steps, a tool group, on_response, a nested step)."""
