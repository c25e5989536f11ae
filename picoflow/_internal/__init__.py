"""Small helpers every layer above `stores/` may use: state paths, durations, redaction, results.

Nothing here imports a step, a flow, the runner or the engine, so any package can depend on it.
"""
