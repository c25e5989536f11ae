"""Long-term memory: what a flow remembers about an owner across sessions (L1-L5).

`MemoryBank` is the app's handle on one owner's entries (`engine.memory_bank(owner)`);
`Step.use_long_term_memory()` gives a step the `remember`/`recall` tools and, optionally, puts
the most relevant entries in its requests (`inject`). The entries live in the session store's
own database (see `stores._bank`).
"""

from .bank import MemoryBank, owner_of, require_bank
from .spec import LongTermSpec
from .tools import bank_block, bank_tools

__all__ = ["MemoryBank", "LongTermSpec", "bank_block", "bank_tools", "owner_of", "require_bank"]
