"""People in the loop (K1-K7): approvals of tool calls, exactly-once tool effects, handoff.

A step-based flow knows where it stands, so a pause for a person is a saved point at one tool
call, not a re-run of a node. The pieces:

- `records`: the approval records and the operator record, as the session document holds them.
- `keys`: `Step.tool_call_key`, the stable key of the call a tool is answering (K5).
- `gate`: inside a turn, a call that needs approval is recorded instead of run (K1).
- `hold`: a user message while an approval waits, or while an operator has the session (K2, K6).
- `resume`: `resolve_approval` continues the step from the recorded call (K3).
- `handoff`: the `handoff()` transition, `operator_reply` and `return_to_flow` (K6).
- `api`: the engine methods that put these together.
"""
