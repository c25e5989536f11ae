"""People in the loop inside a turn (K1-K7): the approval gate, holds, handoff, resume.

A step-based flow knows where it stands, so a pause for a person is a saved point at one tool
call, not a re-run of a node. The records themselves (`_internal.people_records`) and the
call keys (`_internal.call_keys`) sit lower, since the session document and `Step` read them;
the engine's methods that put these together are `engine._people`. Here:

- `gate`: inside a turn, a call that needs approval is recorded instead of run (K1).
- `hold`: a user message while an approval waits, or while an operator has the session (K2, K6).
- `resume`: `resolve_approval` continues the step from the recorded call (K3).
- `handoff`: the `handoff()` transition, `operator_reply` and `return_to_flow` (K6).
"""
