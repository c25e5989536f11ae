"""picoflow.graph: a flow's steps and moves as Mermaid text, read from the code (F2, F8, R4, V1-V3).

The flows under test are written to a module file first, because moves are read from source
code, and the source of a class typed into a test function would be the whole test file.
"""

from __future__ import annotations

import asyncio
import importlib
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from picoflow import FlowDefinitionError, FlowEngine
from picoflow.graph import Move as GraphMove
from picoflow.graph import draw, flow_graph, main
from picoflow.stores import SQLiteStore
from picoflow.testing import ScriptedChatModel, tool_call

SHOP = '''
from typing import Any

import picoflow
from picoflow import EndStep, Flow, Step, go, stay, tool
from picoflow import go as move


class LogicStep(Step):
    """Stands in for picoflow's LogicStep (V1): the graph tells one by its class name."""


def finish(text: str | None = None) -> Any:
    """Stands in for picoflow's finish (V7): the graph tells it by its name."""


class Shared(Step):
    @tool
    def leave(self) -> Any:
        """The guest is done."""
        return go(EndStep).with_prompt("Say goodbye.")

    def forward_to(self, destination: type[Step], note: str = "") -> Any:
        return go(destination).with_message(note)


class BrowseStep(Shared):
    @tool
    def pick(self, item: str) -> Any:
        """Put an item in the basket."""
        if not item:
            return stay("Which item?")
        return go(CartStep).with_state({"item": item}).with_prompt("Show the basket.")

    @tool("ask_help")
    def help_me(self) -> Any:
        """Hand over to a person."""
        return self.forward_to(destination=HelpStep)

    @tool
    def look_up(self) -> Any:
        """Check the stock."""
        return self.run_steps([StockStep, (PriceStep, "price?")])


class CartStep(Shared):
    @tool
    def back(self) -> Any:
        """Keep shopping."""
        return self.forward_to(BrowseStep)

    @tool
    def pay(self) -> Any:
        """Pay now."""
        return picoflow.go("PayStep")

    def on_response(self, reply: Any) -> Any:
        return move(RouteStep) if reply == "route" else None


class RouteStep(LogicStep):
    async def run_logic(self) -> Any:
        if self.get_state("vip"):
            finish("Welcome back.")
        return go(self.pick_next())  # computed: moves_to below answers for it, no note

    def pick_next(self) -> Any:
        return BrowseStep


RouteStep.moves_to = ("HelpStep", finish)


class PayStep(Step):
    @tool
    async def confirm(self) -> Any:
        """Confirm the payment."""
        await self.run_step(StockStep, "reserve")
        self.flow.complete()

    @tool
    def retry(self) -> Any:
        """Try another card."""
        return go(self.previous)


class HelpStep(Step):
    nested_steps = ("PriceStep",)

    @tool
    def done(self) -> Any:
        """Back to the shop."""
        return go(NotRegisteredStep)


class StockStep(Step):
    pass


class PriceStep(Step):
    pass


class NotRegisteredStep(Step):
    pass


class ShopFlow(Flow):
    def define_steps(self) -> list[Step]:
        return [
            BrowseStep(self), CartStep(self), RouteStep(self), PayStep(self), HelpStep(self),
            StockStep(self), PriceStep(self), EndStep(self),
        ]
'''

SHOP_MERMAID = """\
flowchart TD
    %% ShopFlow, drawn by picoflow.graph
    %% PayStep.retry: go(self.previous) names no step the graph can read; declare the steps it
    %%   can reach with moves_to = (...) on PayStep.
    %% HelpStep.done: NotRegisteredStep is not registered in ShopFlow.define_steps(), so the
    %%   move is not drawn.
    __start__((start))
    BrowseStep[BrowseStep]
    CartStep[CartStep]
    RouteStep{{RouteStep}}
    PayStep[PayStep]
    HelpStep[HelpStep]
    StockStep[StockStep]
    PriceStep[PriceStep]
    EndStep([EndStep])
    __end__((end))
    __start__ --> BrowseStep
    BrowseStep -->|pick| CartStep
    BrowseStep -->|ask_help| HelpStep
    BrowseStep -.->|look_up| StockStep
    BrowseStep -.->|look_up| PriceStep
    BrowseStep -->|leave| EndStep
    CartStep -->|back| BrowseStep
    CartStep -->|pay| PayStep
    CartStep -->|leave| EndStep
    CartStep -->|on_response| RouteStep
    RouteStep -->|run_logic, moves_to| __end__
    RouteStep -->|moves_to| HelpStep
    PayStep -.->|confirm| StockStep
    PayStep -->|confirm| __end__
    HelpStep -.->|nested_steps| PriceStep
    EndStep --> __end__
    classDef terminal fill:#f1f3f5,stroke:#868e96
    class __start__,__end__ terminal
    classDef logic fill:#fff3bf,stroke:#e67700
    class RouteStep logic
    classDef nested stroke-dasharray:5 3
    class PriceStep,StockStep nested
"""


def load(tmp_path: Path, source: str, name: str) -> Any:
    """Import `source` as module `name` from a real file, so its methods' source is readable."""
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delitem(sys.modules, "graph_shop", raising=False)
    module = load(tmp_path, SHOP, "graph_shop")
    yield module
    sys.modules.pop("graph_shop", None)


def test_f8_moves_are_read_from_every_form_of_go_finish_and_nested_runs(shop) -> None:
    graph = flow_graph(shop.ShopFlow())
    assert set(graph.moves) == {
        GraphMove("BrowseStep", "CartStep", "pick", "go"),  # go(X).with_state(...).with_prompt
        GraphMove("BrowseStep", "HelpStep", "ask_help", "go"),  # keyword through a helper
        GraphMove("BrowseStep", "StockStep", "look_up", "nested"),  # run_steps([...])
        GraphMove("BrowseStep", "PriceStep", "look_up", "nested"),  # ... (Step, message)
        GraphMove("BrowseStep", "EndStep", "leave", "go"),  # inherited tool
        GraphMove("CartStep", "BrowseStep", "back", "go"),  # positional through a helper
        GraphMove("CartStep", "PayStep", "pay", "go"),  # picoflow.go("name")
        GraphMove("CartStep", "RouteStep", "on_response", "go"),  # a hook, go imported as move
        GraphMove("CartStep", "EndStep", "leave", "go"),
        GraphMove("RouteStep", None, "run_logic", "finish"),  # finish(...)
        GraphMove("RouteStep", "HelpStep", "moves_to", "go"),  # declared by name
        GraphMove("RouteStep", None, "moves_to", "finish"),  # declared finish
        GraphMove("PayStep", "StockStep", "confirm", "nested"),  # run_step(X, message)
        GraphMove("PayStep", None, "confirm", "finish"),  # self.flow.complete()
        GraphMove("HelpStep", "PriceStep", "nested_steps", "nested"),  # declared nested
    }
    assert graph.initial == "BrowseStep"
    assert graph.logic_steps == {"RouteStep"}
    assert graph.end_steps == {"EndStep"}


def test_f2_the_mermaid_text_shows_start_end_logic_nested_and_what_was_not_read(shop) -> None:
    assert draw(shop.ShopFlow()) == SHOP_MERMAID
    assert shop.ShopFlow().graph() == SHOP_MERMAID  # Flow.graph() is the same drawing


def test_f3_the_initial_step_comes_from_initial_step(tmp_path, monkeypatch) -> None:
    source = SHOP + (
        "\n\nclass CartFirst(ShopFlow):\n    def initial_step(self):\n        return CartStep\n"
    )
    monkeypatch.delitem(sys.modules, "graph_cart_first", raising=False)
    flow = load(tmp_path, source, "graph_cart_first").CartFirst()
    assert flow_graph(flow).initial == "CartStep"
    assert "    __start__ --> CartStep\n" in draw(flow)


BAD_DECLARATION = """
from picoflow import EndStep, Flow, Step


class LostStep(Step):
    moves_to = (42,)


class LostFlow(Flow):
    def define_steps(self):
        return [LostStep(self), EndStep(self)]
"""


def test_f5_a_bad_moves_to_entry_is_a_definition_error(tmp_path, monkeypatch) -> None:
    monkeypatch.delitem(sys.modules, "graph_lost", raising=False)
    flow = load(tmp_path, BAD_DECLARATION, "graph_lost").LostFlow()
    with pytest.raises(FlowDefinitionError) as caught:
        flow.graph()
    assert str(caught.value) == (
        "LostStep.moves_to lists 42; list Step classes or step names, or finish. For example: "
        "moves_to = (OtherStep,)."
    )


def test_f2_steps_without_readable_source_are_noted_not_guessed() -> None:
    namespace: dict[str, Any] = {}
    exec(  # noqa: S102 - a class whose source file does not exist, as in a REPL
        "from picoflow import EndStep, Flow, Step, go, tool\n"
        "class OnlyStep(Step):\n"
        "    @tool\n"
        "    def leave(self):\n"
        "        'Leave.'\n"
        "        return go(EndStep)\n"
        "class ReplFlow(Flow):\n"
        "    def define_steps(self):\n"
        "        return [OnlyStep(self), EndStep(self)]\n",
        namespace,
    )
    graph = flow_graph(namespace["ReplFlow"]())
    assert graph.moves == ()
    assert graph.notes == (
        "OnlyStep.leave: its source cannot be read, so its moves are unknown; declare them "
        "with moves_to = (...) on OnlyStep.",
        "EndStep: no move to it was found in the code.",
    )


# -- a stored session's path -------------------------------------------------------------------


async def stored_session(shop: Any, tmp_path: Path) -> dict[str, Any]:
    """A real session: Browse -> Cart -> Browse -> Cart -> End, on a SQLite store."""
    model = ScriptedChatModel(script=[
        tool_call("pick", item="tea"), "Your basket: tea.",
        tool_call("back"), "What else?",
        tool_call("pick", item="cake"), "Your basket: cake.",
        tool_call("leave"), "Goodbye!",
    ])  # fmt: skip
    flow = type("ShopFlow", (shop.ShopFlow,), {"config_model": lambda self: model})
    engine = FlowEngine([flow], store=SQLiteStore(tmp_path / "shop.db"))
    try:
        first = await engine.run("ShopFlow", "tea please")
        for message in ("go back", "cake please", "bye"):
            await engine.run("ShopFlow", message, first.session_id)
        doc = await engine.get_session(first.session_id)
    finally:
        await engine.aclose()
    assert doc is not None
    return doc


PATH_STYLES = """\
    classDef visited fill:#d3f9d8,stroke:#2b8a3e,stroke-width:2px
    classDef current fill:#d3f9d8,stroke:#2b8a3e,stroke-width:4px
    class BrowseStep,CartStep,EndStep visited
    linkStyle 0,1,6,8,15 stroke:#2b8a3e,stroke-width:3px
"""


async def test_p1_a_session_path_is_numbered_on_the_edges_it_took(shop, tmp_path) -> None:
    doc = await stored_session(shop, tmp_path)
    assert doc["sequence"] == ["BrowseStep", "CartStep", "BrowseStep", "CartStep", "EndStep"]
    text = shop.ShopFlow().graph(session=doc)
    assert "    BrowseStep -->|pick: moves 1, 3| CartStep\n" in text
    assert "    CartStep -->|back: move 2| BrowseStep\n" in text
    assert "    CartStep -->|leave: move 4| EndStep\n" in text
    assert text.endswith(PATH_STYLES)


async def test_p1_a_move_the_code_does_not_show_is_a_red_dotted_edge(shop, tmp_path) -> None:
    doc = await stored_session(shop, tmp_path)
    doc["sequence"] = ["BrowseStep", "StockStep", "CartStep"]  # StockStep never moves anywhere
    doc["run_status"] = "running"
    doc["current_step"] = "CartStep"
    text = draw(shop.ShopFlow(), session=doc)
    assert "    BrowseStep -.->|look_up: move 1| StockStep\n" in text  # a nested edge, taken
    assert "    StockStep -.->|move 2: not in the code| CartStep\n" in text
    assert "    class CartStep current\n" in text
    assert text.endswith("    linkStyle 16 stroke:#c92a2a,stroke-width:3px\n")


async def test_p1_a_session_of_another_flow_is_refused(shop, tmp_path) -> None:
    doc = await stored_session(shop, tmp_path) | {"flow": "HotelFlow"}
    with pytest.raises(ValueError) as caught:
        draw(shop.ShopFlow(), session=doc)
    assert str(caught.value) == (
        f"Session {doc['id']!r} belongs to flow 'HotelFlow', not 'ShopFlow'; draw it over the "
        "flow it ran."
    )


# -- python -m picoflow.graph ------------------------------------------------------------------


def test_cli_prints_the_diagram(shop, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["graph_shop:ShopFlow"]) == 0
    assert capsys.readouterr() == (SHOP_MERMAID, "")


async def test_cli_overlays_a_stored_session(shop, tmp_path, monkeypatch, capsys) -> None:
    doc = await stored_session(shop, tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    # main runs its own event loop, as `python -m picoflow.graph` does
    status = await asyncio.to_thread(main, ["graph_shop:ShopFlow", "--session", doc["id"],
                                           "--store", url])  # fmt: skip
    assert status == 0
    assert capsys.readouterr().out == draw(shop.ShopFlow(), session=doc)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["graph_shop"], "'graph_shop' is not MODULE:FLOW; write e.g. myapp.flows:ShopFlow."),
        (["graph_shop:Nope"], "graph_shop:Nope is not a Flow subclass (found None)."),
        (
            ["graph_shop:BrowseStep"],
            "graph_shop:BrowseStep is not a Flow subclass (found <class 'graph_shop.BrowseStep'>).",
        ),
        (
            ["no_such_module_here:ShopFlow"],
            "cannot import 'no_such_module_here' (No module named 'no_such_module_here'); run "
            "from the directory that contains it, or put it on PYTHONPATH.",
        ),
        (
            ["graph_shop:ShopFlow", "--session", "abc"],
            "--session needs the store it is in: pass --store URL or set PICOFLOW_STORE (e.g. "
            "sqlite:///sessions.db).",
        ),
        (
            ["graph_shop:ShopFlow", "--session", "../etc", "--store", "memory:"],
            "'../etc' is not a session id.",
        ),
        (
            ["graph_shop:ShopFlow", "--session", "A" * 24, "--store", "memory:"],
            f"There is no session {'A' * 24} in that store.",
        ),
    ],
)
def test_cli_bad_input_is_one_line_and_status_2(argv, message, shop, tmp_path, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(argv) == 2
    assert capsys.readouterr() == ("", f"error: {message}\n")


# -- the path from the revision history (W1) ---------------------------------------------------


async def rewound_session(shop: Any, store: Any) -> tuple[str, str]:
    """Browse -> Cart -> Browse, undo (back to Cart), pay (-> Pay), that turn edited to "back"
    (Pay -> Cart, then -> Browse); and a fork of revision 1. Returns (session, fork)."""
    model = ScriptedChatModel(script=[
        tool_call("pick", item="tea"), "Your basket: tea.",
        tool_call("back"), "What else?",
        tool_call("pay"), "Pay now?",
        tool_call("back"), "Back to the shelves.",
    ])  # fmt: skip
    flow = type("ShopFlow", (shop.ShopFlow,), {"config_model": lambda self: model})
    engine = FlowEngine([flow], store=store)
    first = await engine.run("ShopFlow", "tea please")
    session_id = first.session_id
    await engine.run("ShopFlow", "go back", session_id)
    await engine.undo(session_id)
    await engine.run("ShopFlow", "pay", session_id)
    edited = await engine.edit_message(session_id, 3, "no, back to the shelves")
    assert edited.success, edited.message
    fork = await engine.fork(session_id, at_revision=1)
    return session_id, fork


HISTORY_PATH = """\
    BrowseStep -->|pick: move 1| CartStep
    CartStep -->|back: moves 2, 6| BrowseStep
    CartStep -->|pay: move 4| PayStep
    BrowseStep -.->|rewind to revision 0: move 3| CartStep
    PayStep -.->|edit of revision 3: move 5| CartStep
    class BrowseStep,CartStep,PayStep visited
    class BrowseStep current
    linkStyle 0,1,6,7 stroke:#2b8a3e,stroke-width:3px
    linkStyle 16,17 stroke:#e67700,stroke-width:3px,stroke-dasharray:6 4
"""


def path_lines(text: str) -> str:
    """The lines of a drawing that show the path: numbered arrows, path classes, styles."""
    return "".join(
        line + "\n"
        for line in text.splitlines()
        if re.search(r"\bmoves? \d|\|fork ", line)
        or line.lstrip().startswith(("class BrowseStep", "linkStyle"))
    )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_w1_the_path_is_drawn_from_the_revisions_with_undo_and_edit(shop, tmp_path, kind):
    from picoflow.graph import load_history
    from picoflow.stores import MemoryStore

    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "shop.db")
    session_id, _ = await rewound_session(shop, store)
    history = await load_history(store, session_id)
    assert [entry["action"] for entry, _ in history] == ["turn", "turn", "rewind", "turn", "edit"]

    text = shop.ShopFlow().graph(history=history)
    assert path_lines(text) == HISTORY_PATH
    doc = await store.load(session_id)
    # The document alone knows only the line the session continues: Browse -> Cart -> Browse.
    alone = path_lines(draw(shop.ShopFlow(), session=doc))
    assert "rewind" not in alone and "PayStep" not in alone
    assert "    CartStep -->|back: move 2| BrowseStep\n" in alone
    await store.aclose()


async def test_w1_a_fork_starts_its_path_at_the_origin_revision(shop, tmp_path) -> None:
    from picoflow.graph import load_history

    store = SQLiteStore(tmp_path / "shop.db")
    session_id, fork = await rewound_session(shop, store)
    text = draw(shop.ShopFlow(), history=await load_history(store, fork))
    assert path_lines(text) == (
        f"    __start__ -->|fork of {session_id} at revision 1| BrowseStep\n"
        "    BrowseStep -->|pick: move 1| CartStep\n"
        "    CartStep -->|back: move 2| BrowseStep\n"
        "    class BrowseStep,CartStep visited\n"
        "    class BrowseStep current\n"
        "    linkStyle 0,1,6 stroke:#2b8a3e,stroke-width:3px\n"
    )
    await store.aclose()


async def test_w1_the_cli_draws_the_revisions_and_falls_back_to_the_document(
    shop, tmp_path, monkeypatch, capsys
) -> None:
    from picoflow.graph import load_history

    store = SQLiteStore(tmp_path / "shop.db")
    session_id, _ = await rewound_session(shop, store)
    history = await load_history(store, session_id)
    doc = await store.load(session_id)
    await store.aclose()
    monkeypatch.syspath_prepend(str(tmp_path))
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    status = await asyncio.to_thread(main, ["graph_shop:ShopFlow", "--session", session_id,
                                           "--store", url])  # fmt: skip
    assert status == 0
    assert capsys.readouterr().out == draw(shop.ShopFlow(), session=doc, history=history)

    class NoHistory:  # a store of one's own that keeps no revisions
        async def load(self, session_id: str) -> Any:
            return doc

    assert await load_history(NoHistory(), session_id) == []
    assert draw(shop.ShopFlow(), session=doc, history=[]) == draw(shop.ShopFlow(), session=doc)


async def test_w1_revisions_without_documents_fall_back_to_their_steps(shop) -> None:
    """A listing without documents still shows where each turn started and ended."""
    entries = [
        {"revision": 0, "action": "turn", "step_before": None, "step_after": "CartStep"},
        {"revision": 1, "action": "turn", "step_before": "CartStep", "step_after": "PayStep"},
        {"revision": 2, "action": "rewind", "restored": 0, "step_before": "PayStep",
         "step_after": "CartStep"},
    ]  # fmt: skip
    doc = {"flow": "ShopFlow", "id": "x", "run_status": "running", "current_step": "CartStep"}
    text = draw(shop.ShopFlow(), session=doc, history=[(entry, None) for entry in entries])
    assert "    __start__ -.->|not in the code| CartStep\n" in text  # Browse -> Cart unknown
    assert "    CartStep -->|pay: move 1| PayStep\n" in text
    assert "    PayStep -.->|rewind to revision 0: move 2| CartStep\n" in text
    with pytest.raises(ValueError) as caught:
        draw(shop.ShopFlow(), history=[(entry, None) for entry in entries])
    assert str(caught.value) == (
        "The newest revision of the history has no document, so the session's flow and step "
        "are unknown; pass session= (engine.get_session(session_id))."
    )


DIRECT = """
from picoflow import EndStep, Flow, Step, direct_to, go, tool


class AskStep(Step):
    @tool
    def answer(self, text: str):
        \"\"\"Answer verbatim and hand over.\"\"\"
        return direct_to(EndStep, text)

    @tool
    def route(self, again: bool):
        \"\"\"Ask again or move on.\"\"\"
        return go("AskStep" if again else "ThanksStep")


class ThanksStep(Step):
    pass


class DirectFlow(Flow):
    def define_steps(self):
        return [AskStep(self), ThanksStep(self), EndStep(self)]
"""


def test_f8_d4_a_direct_to_and_both_branches_of_a_conditional_go_are_moves(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.delitem(sys.modules, "graph_direct", raising=False)
    flow = load(tmp_path, DIRECT, "graph_direct").DirectFlow()
    graph = flow_graph(flow)
    assert ("AskStep", "EndStep") in graph.edges()
    assert {("AskStep", "AskStep"), ("AskStep", "ThanksStep")} <= graph.edges()  # both branches
