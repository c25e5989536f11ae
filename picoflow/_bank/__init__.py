"""Long-term memory: what a flow remembers about an owner across sessions (L1-L5).

`MemoryBank` is the app's handle on one owner's entries (`engine.memory_bank(owner)`). A step's
wish for long-term memory (`Step.use_long_term_memory()`) is `step._long_term.LongTermSpec`; the
`remember`/`recall` tools a turn gives it are `_runner.bank_tools`. The entries live in the
session store's own database (see `stores._bank`).
"""

from picoflow._bank.bank import MemoryBank, owner_of, require_bank

__all__ = ["MemoryBank", "owner_of", "require_bank"]
