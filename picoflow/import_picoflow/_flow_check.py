"""An imported document against the picoflow Flow that will continue it.

picoflow reads a session through the flow's registered steps and their namespaces: state of a
step the flow does not have is dropped at the first save, a cursor on such a step cannot
continue, and a namespace no step uses is never read. PicoFlow's default namespace is the step's
name; when the picoflow flow keeps that step's history under another namespace (the demo's
ExploreStep uses "hotel-explore") and nothing else claims it, the history follows the step.
"""

from __future__ import annotations

from typing import Any

from picoflow.flow import Flow
from picoflow.import_picoflow._report import ImportReport
from picoflow.step import Step

__all__ = ["check_against"]


def check_against(out: dict[str, Any], flow_class: type[Flow], report: ImportReport) -> None:
    """Adjust `out` where the flow decides it, and report what the flow will not read."""
    steps = flow_class().steps
    _follow_default_namespaces(out, steps, flow_class.name, report)
    for name in out["steps"]:
        if name not in steps:
            report.lost.append(
                f"step '{name}' is not a step of {flow_class.name}; its state is dropped at the "
                "first save (rename it with renames={'" + name + "': 'StepName'})"
            )
    current = out["current_step"]
    if current is not None and current not in steps and out["run_status"] == "running":
        report.lost.append(
            f"the current step '{current}' is not a step of {flow_class.name}; the session was "
            "marked aborted (its id will start a new session)"
        )
        out["run_status"] = "aborted"
    used = {step.namespace for step in steps.values()}
    for namespace in out["memory"]:
        if namespace not in used:
            report.changed.append(
                f"namespace '{namespace}' is used by no step of {flow_class.name}; it is kept "
                "but never read"
            )


def _follow_default_namespaces(
    out: dict[str, Any], steps: dict[str, Step], flow_name: str, report: ImportReport
) -> None:
    memory = out["memory"]
    used = {step.namespace for step in steps.values()}
    for name, step in steps.items():
        if name in memory and name not in used and step.namespace not in memory:
            memory[step.namespace] = memory.pop(name)
            report.changed.append(
                f"namespace '{name}' (PicoFlow's default for step {name}) was renamed "
                f"'{step.namespace}', the namespace {flow_name}.{name} uses"
            )
