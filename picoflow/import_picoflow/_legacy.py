"""The older PicoFlow document (G2, `version: 1`) rewritten in the shape of the newer one (G3).

G2 keeps its one flow in a `flows` array, memory as a list of `{nameSpace, history}`, the
cursor as the one step with `isActive: true`, the sequence as plain step names, a step's model
as `modelName`/`modelParams`, and an `expireAfter` in seconds. After this rewrite a G2 document
goes through the same conversion as a G3 one (reference section 15's reading of G2).
"""

from __future__ import annotations

from typing import Any

from picoflow.import_picoflow._report import ImportReport

__all__ = ["from_g2", "guess_provider"]

_PREFIXES = {
    "gpt-": "openai",
    "o1": "openai",
    "o3": "openai",
    "o4": "openai",
    "claude": "anthropic",
    "gemini": "google_genai",
    "deepseek": "deepseek",
}


def guess_provider(model_name: str) -> str:
    """G2 names models only ('gpt-4o'); its catalog tells the provider by the name's prefix."""
    for prefix, provider in _PREFIXES.items():
        if model_name.startswith(prefix):
            return provider
    return "unknown"


def from_g2(doc: dict[str, Any], report: ImportReport) -> dict[str, Any]:
    """A G3-shaped copy of a G2 document; what G3 has no place for is reported."""
    flows = doc.get("flows") or [{}]
    if len(flows) > 1:
        names = ", ".join(str(f.get("name")) for f in flows[1:])
        report.lost.append(f"only the first of {len(flows)} flows was imported; not: {names}")
    flow = flows[0]
    steps = [_step(entry) for entry in flow.get("steps") or []]
    active = [entry.get("name") for entry in flow.get("steps") or [] if entry.get("isActive")]
    if len(active) > 1:
        report.lost.append(
            f"{len(active)} steps were active ({', '.join(map(str, active))}); the cursor was "
            f"put on the first, {active[0]}"
        )
    memory = {
        str(space.get("nameSpace")): {"messages": space.get("history") or []}
        for space in flow.get("memory") or []
    }
    return {
        **{k: v for k, v in doc.items() if k != "flows"},
        "flow": {
            "name": flow.get("name"),
            "context": flow.get("context"),
            "memory": memory,
            "steps": steps,
            "currentStep": active[0] if active else None,
            "sequence": list(flow.get("sequence") or []),
        },
    }


def _step(entry: dict[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = {"name": entry.get("name"), "state": entry.get("state") or {}}
    model_name = entry.get("modelName")
    if isinstance(model_name, str) and model_name:
        step["model"] = {
            "provider": guess_provider(model_name),
            "name": model_name,
            "params": entry.get("modelParams") or {},
        }
    return step
