"""One PicoFlow session document (G3 v1.5, or G2 via `_legacy`) as a picoflow document (P1).

Field by field (PicoFlow → picoflow): `id` (kept when it is a valid session id, so clients
holding it continue) → `id`; `runStatus` → `run_status`; `createdOn`/`saveOn` → `created_at`/
`updated_at`; `flow.name` → `flow`; `flow.context` → `context`; `flow.steps[]` →
`steps{name: {state, model}}`; `flow.currentStep` → `current_step`; `flow.sequence` →
`sequence` (and `sequence_levels` when it has nested entries); `flow.memory{ns: {messages,
summary}}` → `memory`; `tokens` → `usage.model`; `warn`/`error` entries → `warnings`.
Everything else is named in the report.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import message_to_dict, messages_from_dict

from picoflow._internal.state import now_iso, to_json
from picoflow.flow import Flow
from picoflow.import_picoflow._flow_check import check_against
from picoflow.import_picoflow._legacy import from_g2
from picoflow.import_picoflow._messages import convert_history
from picoflow.import_picoflow._plain import iso_time, plain
from picoflow.import_picoflow._report import ImportReport
from picoflow.models import _without_secrets
from picoflow.session import MAX_WARNINGS, empty_usage, is_session_id, new_document, new_session_id

__all__ = ["convert", "DEFAULT_RENAMES"]

DEFAULT_RENAMES = {"TerminateSessionStep": "EndStep"}
"""PicoFlow's built-in terminal step is picoflow's `EndStep`."""

_TOP = {"_id", "id", "revision", "version", "runStatus", "createdOn", "saveOn", "tokens"}
_TOP |= {"flow", "flows", "log", "error", "warn", "debug", "verbose", "expireAfter"}
_FLOW = {"name", "model", "context", "memory", "steps", "currentStep", "sequence"}
_STATUSES = ("running", "completed", "aborted")


def convert(
    doc: dict[str, Any],
    *,
    flow_name: str | None = None,
    renames: dict[str, str] | None = None,
    namespaces: dict[str, str] | None = None,
    keep_expiry: bool = True,
    flow: type[Flow] | None = None,
) -> tuple[dict[str, Any], ImportReport]:
    """Convert a PicoFlow session document (G3 or G2) into a picoflow one, with a report.

    Args:
        doc: the PicoFlow document, as stored (extended JSON and BSON values are fine); it is
            not changed.
        flow_name: the flow name to store (when the Python flow class is named otherwise).
        renames: PicoFlow step name -> picoflow step name, on top of `DEFAULT_RENAMES`; a
            namespace named after a renamed step follows it.
        namespaces: PicoFlow namespace -> picoflow namespace.
        keep_expiry: False drops a G2 document's `expireAfter` instead of turning it into
            `expires_at`.
        flow: the picoflow Flow class that will continue the sessions: the flow name defaults
            to its name, and steps and namespaces are checked against it.

    Raises:
        ValueError: `doc` is not a PicoFlow session document.
    """
    if flow is not None and flow_name is None:
        flow_name = flow.name
    source = plain(doc)
    generation = _generation(source)
    session_id = _session_id(source)
    report = ImportReport(session_id, generation)
    _report_id(source, session_id, report)
    if generation == "G2":
        source = from_g2(source, report)
    stored = source["flow"]
    names = {**DEFAULT_RENAMES, **(renames or {})}
    _report_unknown(source, stored, report)
    out = new_document(session_id, flow_name or str(stored.get("name") or ""), None)
    _report_flow_name(stored, flow_name, report)
    _times(out, source, keep_expiry, report)
    _run(out, source, stored, names, report)
    out["memory"] = _memory(stored.get("memory"), names, namespaces or {}, report)
    out["usage"] = _usage(source.get("tokens"), report)
    out["warnings"] = _warnings(source, report)
    if flow is not None:
        check_against(out, flow, report)
    _check_loads(out)
    return out, report


def _generation(doc: Any) -> str:
    if isinstance(doc, dict) and isinstance(doc.get("flow"), dict):
        return "G3"
    if isinstance(doc, dict) and isinstance(doc.get("flows"), list):
        return "G2"
    raise ValueError(
        "not a PicoFlow session document: it has neither a 'flow' object (PicoFlow 1.5) nor "
        "a 'flows' list (older PicoFlow)"
        + (f" (id {doc.get('id') or doc.get('_id')!r})" if isinstance(doc, dict) else "")
    )


def _session_id(doc: dict[str, Any]) -> str:
    stored = doc.get("id") or doc.get("_id")
    return str(stored) if is_session_id(str(stored)) else new_session_id()


def _report_id(doc: dict[str, Any], session_id: str, report: ImportReport) -> None:
    """Say when the session could not keep the document's id, so a user can find it again."""
    stored_id = doc.get("id") or doc.get("_id")
    if stored_id is None:
        report.changed.append(f"the document has no id; the session got the id {session_id}")
    elif str(stored_id) != session_id:
        report.changed.append(
            f"the id {stored_id!r} is not a valid picoflow session id; the session got the new "
            f"id {session_id}"
        )


def _report_flow_name(flow: dict[str, Any], flow_name: str | None, report: ImportReport) -> None:
    """Say when the session is stored under another flow name than PicoFlow's."""
    if flow_name and flow_name != flow.get("name"):
        report.changed.append(f"flow '{flow.get('name')}' was renamed '{flow_name}'")


def _report_unknown(doc: dict[str, Any], flow: dict[str, Any], report: ImportReport) -> None:
    for key in sorted(set(doc) - _TOP):
        report.lost.append(f"top-level field '{key}' has no place in a picoflow document")
    for key in sorted(set(flow) - _FLOW):
        report.lost.append(f"flow field '{key}' has no place in a picoflow document")
    model = flow.get("model")
    if isinstance(model, dict):
        report.changed.append(
            f"the flow's model ({model.get('provider')}:{model.get('name')}) is not stored in "
            "picoflow documents; the flow's config_model() decides"
        )


def _times(out: dict[str, Any], doc: dict[str, Any], keep: bool, report: ImportReport) -> None:
    created = iso_time(doc.get("createdOn")) or now_iso()
    out["created_at"] = created
    out["updated_at"] = iso_time(doc.get("saveOn")) or created
    seconds = doc.get("expireAfter")
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool):
        return
    if not keep:
        report.changed.append(f"expireAfter ({seconds} s) was dropped: the session never expires")
        return
    moment = datetime.fromisoformat(out["updated_at"].replace("Z", "+00:00"))
    moment += timedelta(seconds=seconds)
    out["expires_at"] = iso_time(moment)
    past = " (already past: its id will start a new session)"
    report.changed.append(
        f"expireAfter ({seconds} s) became expires_at {out['expires_at']}"
        + (past if moment <= datetime.now(UTC) else "")
    )


def _run(
    out: dict[str, Any],
    doc: dict[str, Any],
    flow: dict[str, Any],
    names: dict[str, str],
    report: ImportReport,
) -> None:
    """Status, context, steps, cursor and sequence."""
    status = doc.get("runStatus")
    if status not in _STATUSES:
        report.lost.append(f"run status {status!r} is unknown; the session was marked aborted")
        status = "aborted"
    out["run_status"] = status
    out["context"] = _context(flow.get("context"), report)
    out["steps"] = _steps(flow.get("steps"), names, report)
    current = flow.get("currentStep")
    out["current_step"] = names.get(current, current) if isinstance(current, str) else None
    if out["current_step"] is None and out["run_status"] == "running":
        report.lost.append(
            "no current step was recorded; the session was marked aborted (its id will start "
            "a new session)"
        )
        out["run_status"] = "aborted"
    out["sequence"], levels = _sequence(flow.get("sequence"), names)
    if any(level != 1 for level in levels):
        out["sequence_levels"] = levels  # V2: nested runs kept with their levels
    stored = {str(entry.get("name")) for entry in flow.get("steps") or []} | {current}
    renamed = sorted(old for old in names if old in stored)
    for old in renamed:
        report.changed.append(f"step '{old}' was renamed '{names[old]}'")


def _context(context: Any, report: ImportReport) -> dict[str, Any]:
    if not isinstance(context, dict):
        if context is not None:
            report.lost.append(f"context {context!r} is not an object; it was replaced by {{}}")
        return {"config": {}}
    if context.get("config", {}) is None:
        report.changed.append("context.config was null; it is an empty object now")
        return {**context, "config": {}}
    return dict(context)


def _steps(raw: Any, names: dict[str, str], report: ImportReport) -> dict[str, Any]:
    steps: dict[str, Any] = {}
    for entry in raw if isinstance(raw, list) else []:
        name = str(entry.get("name"))
        name = names.get(name, name)
        if name in steps:
            report.lost.append(f"step '{name}' appears twice; the later entry was dropped")
            continue
        steps[name] = {"state": _state(name, entry.get("state"), report)}
        steps[name]["model"] = _model(entry.get("model"))
    return steps


def _state(step: str, state: Any, report: ImportReport) -> dict[str, Any]:
    if not isinstance(state, dict):
        return {}
    clean = dict(state)
    if "_stopTool" in clean:
        del clean["_stopTool"]
        report.lost.append(f"step '{step}': legacy state _stopTool was dropped (no meaning here)")
    if "_transient" in clean:
        del clean["_transient"]
        report.lost.append(f"step '{step}': transient state was dropped (it never persists)")
    if "_saveOn" in clean:
        clean["_saveOn"] = iso_time(clean["_saveOn"])
    return clean


def _model(model: Any) -> dict[str, Any] | None:
    if not isinstance(model, dict):
        return None
    retry = model.get("retryAttempts", model.get("retry_attempts", 3))
    return {
        "provider": str(model.get("provider") or "unknown"),
        "name": str(model.get("name") or ""),
        "params": _without_secrets(model.get("params") or {}),
        "retry_attempts": retry if isinstance(retry, int) else 3,
    }


def _sequence(raw: Any, names: dict[str, str]) -> tuple[list[str], list[int]]:
    """Step names and their levels; plain (G2) entries are level 1."""
    sequence: list[str] = []
    levels: list[int] = []
    for entry in raw if isinstance(raw, list) else []:
        level = 1
        if isinstance(entry, dict):
            found = entry.get("level", 1)
            level = found if isinstance(found, int) and found >= 1 else 1
            entry = entry.get("stepName")
        sequence.append(names.get(str(entry), str(entry)))
        levels.append(level)
    return sequence, levels


def _memory(
    raw: Any, names: dict[str, str], namespaces: dict[str, str], report: ImportReport
) -> dict[str, Any]:
    if isinstance(raw, list):  # PicoFlow before 1.17 kept G3 memory as a list too
        raw = {
            str(e.get("nameSpace")): {"messages": e.get("history", e.get("messages"))} for e in raw
        }
    memory: dict[str, Any] = {}
    for namespace, entry in (raw if isinstance(raw, dict) else {}).items():
        target = str(namespaces.get(namespace) or names.get(namespace, namespace))
        if target in memory:
            report.lost.append(
                f"namespace '{namespace}' became '{target}', which another "
                "namespace already became; it was dropped"
            )
            continue
        if target != namespace:
            report.changed.append(f"namespace '{namespace}' was renamed '{target}'")
        entry = entry if isinstance(entry, dict) else {}
        where = f"namespace '{target}'"
        messages = convert_history(entry.get("messages"), where, names, report)
        summary = entry.get("summary") or None
        if entry.get("summarizedThroughId"):
            report.changed.append(f"{where}: summarizedThroughId was dropped (not needed here)")
        memory[target] = {
            "messages": [message_to_dict(m) for m in messages],
            "summary": summary,
            "summary_generation": 1 if summary else 0,
            "archived": 0,
            "dropped_facts": 0,
            "summary_usage": {},
        }
    return memory


_DETAILS = (
    ("reasoning_tokens", "reasoningTokens"),
    ("cached_input_tokens", "cachedInputTokens"),
    ("cache_creation_input_tokens", "cacheCreationInputTokens"),
)


def _usage(tokens: Any, report: ImportReport) -> dict[str, dict[str, int]]:
    usage = empty_usage()
    if not isinstance(tokens, dict):
        return usage
    for ours, theirs in (("input_tokens", "inputTokens"), ("output_tokens", "outputTokens")):
        usage["model"][ours] = int(tokens.get(theirs) or 0)
    model = usage["model"]
    model["total_tokens"] = int(tokens.get("totalTokens") or 0) or (
        model["input_tokens"] + model["output_tokens"]
    )
    for ours, theirs in _DETAILS:  # M10: kept where PicoFlow counted them
        if tokens.get(theirs):
            model[ours] = int(tokens[theirs])
    kept = ("inputTokens", "outputTokens", "totalTokens", *(theirs for _, theirs in _DETAILS))
    extra = sorted(key for key, value in tokens.items() if value and key not in kept)
    if extra:
        report.changed.append(
            f"token counters {', '.join(extra)} are not kept separately (they are part of the "
            "totals); model call counts start at 0"
        )
    return usage


def _warnings(doc: dict[str, Any], report: ImportReport) -> list[dict[str, str]]:
    entries: list[dict[str, str]] = []
    for kind, prefix in (("warn", ""), ("error", "PicoFlow error: ")):
        for entry in doc.get(kind) or []:
            if isinstance(entry, dict):
                at = iso_time(entry.get("timestamp")) or ""
                entries.append({"at": str(at), "message": prefix + str(entry.get("message"))})
    entries.sort(key=lambda w: w["at"])
    if len(entries) > MAX_WARNINGS:
        report.lost.append(f"{len(entries) - MAX_WARNINGS} oldest warnings were dropped")
    for kind in ("log", "debug", "verbose"):
        if doc.get(kind):
            report.lost.append(
                f"{len(doc[kind])} entries of PicoFlow's '{kind}' log were not imported"
            )
    return entries[-MAX_WARNINGS:]


def _check_loads(doc: dict[str, Any]) -> None:
    """The document is JSON and its messages load (what the engine will do with it)."""
    to_json(doc, "the imported document")
    for entry in doc["memory"].values():
        messages_from_dict(entry["messages"])
