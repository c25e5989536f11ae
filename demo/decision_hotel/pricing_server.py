"""The hotel pricing MCP server DecisionHotelFlow searches over stdio (research §3.2).

Run by the engine as a child process (``python -m demo.decision_hotel.pricing_server``): one
tool, ``search_hotels``, with `demo.decision_hotel.search.SearchRequest`'s arguments, answering
``{"hotels": [{"hotelName", "prices", "total"}]}``. A request it cannot price (dates that are
no check-in before a checkout) is an MCP error result, which the flow turns into its
"temporarily unavailable" notice.
"""

from __future__ import annotations

from typing import Any

from mcp.server.fastmcp import FastMCP

from demo.decision_hotel.search import (
    TOOL_DESCRIPTION,
    TOOL_NAME,
    BudgetLimits,
    DistanceLimits,
    SearchRequest,
    search,
)

server = FastMCP("hotel-pricing", log_level="WARNING")


@server.tool(name=TOOL_NAME, description=TOOL_DESCRIPTION)
def search_hotels(
    startDate: str,
    endDate: str,
    amenities: list[str],
    roomTypes: list[str],
    budget: BudgetLimits,
    maxDistanceMiles: DistanceLimits,
) -> dict[str, Any]:
    """Price the stay at every matching hotel."""
    request = SearchRequest(
        startDate=startDate,
        endDate=endDate,
        amenities=amenities,
        roomTypes=roomTypes,
        budget=budget,
        maxDistanceMiles=maxDistanceMiles,
    )
    return search(request)


if __name__ == "__main__":
    server.run()
