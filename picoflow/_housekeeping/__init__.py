"""End-of-turn memory work, kept apart from the turn itself (M4-M10, step distillation, L3).

- `scheduler`: when the work runs (inline before the save, or in the background after the
  reply) and how its result is committed; the engine talks only to `scheduler.Housekeeping`.
- `compaction`: a namespace's rolling summary (M4-M8).
- `rebuild`: the drift guard, a summary rebuilt from its archived originals (M12, M16).
- `distillation`: a step's conversation turned into typed state when the step is left.
- `extraction`: raw messages turned into long-term memory entries, when a step is left or the
  session ends (L3).
- `history`: where a history may be cut (M5) and how evicted messages reach the archive (M9).
- `summariser`: the summary model's call, its run config and the transcript it reads.
- `facts`: the dropped-fact check of a new summary.
"""
