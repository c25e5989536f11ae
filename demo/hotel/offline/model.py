"""The offline demo model: a deterministic LangChain chat model that plays the LLM for HotelFlow.

It is *not* an LLM. It reads what an LLM would read — the step's prompt, the compaction memory,
the conversation and the names of the bound tools — and answers with the tool calls and replies
a good LLM would give in this flow, using the rule-based language understanding of
``demo.hotel.offline.language``. When it does not understand, it asks a clarifying question
instead of guessing. With no tools and a request for a summary, it is the compaction summariser.

Because it is a real ``BaseChatModel``, it enters the flow through the same seam as any model:
the engine's provider registry (``FlowEngine(providers={"offline": offline_provider})`` and the
model string ``"offline:hotel"``), or behind an OpenAI-compatible endpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from demo.hotel.offline import respond
from picoflow import ModelSpec

ANNOUNCEMENT = (
    "Offline demo model: deterministic rules, not an LLM. "
    "Set OPENAI_API_KEY or pass --model to use a real model."
)


class OfflineHotelModel(BaseChatModel):
    """HotelFlow's deterministic stand-in for an LLM (see the module docstring)."""

    @property
    def _llm_type(self) -> str:
        return "offline-hotel"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as a provider model does; the model reads their names from the call."""
        return self.bind(tools=[convert_to_openai_tool(tool) for tool in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _answer(messages, kwargs.get("tools"))

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _answer(messages, kwargs.get("tools"))


def _answer(messages: list[BaseMessage], tools: list[dict[str, Any]] | None) -> ChatResult:
    names = [tool.get("function", tool).get("name", "") for tool in tools or []]
    reply = respond(messages, names)
    calls = [
        {**call, "id": f"call_{len(messages)}_{index}"}  # deterministic, and never empty
        for index, call in enumerate(reply.tool_calls, 1)
    ]
    sent = count_tokens_approximately(messages)
    said = count_tokens_approximately([reply])
    usage = UsageMetadata(input_tokens=sent, output_tokens=said, total_tokens=sent + said)
    message = AIMessage(content=reply.content, tool_calls=calls, usage_metadata=usage)
    return ChatResult(generations=[ChatGeneration(message=message)])


def offline_provider(spec: ModelSpec) -> OfflineHotelModel:
    """The provider factory behind "offline:hotel"."""
    if spec.name != "hotel":
        raise ValueError(
            f"The offline provider has one model, 'offline:hotel'; got 'offline:{spec.name}'."
        )
    return OfflineHotelModel()
