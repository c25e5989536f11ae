"""What the four offline demo models read the same way (issue 35): corrections and withdrawals,
and the date a conversation calls "today".

A person corrects themselves mid-sentence ("smith at 10, no wait, make it the later one") or
takes a choice back ("book number 4. hmm no actually hold on"); `settle` splits such a message
into the parts said in order, so a model that replays parts in order keeps the later value, and
`withdrawn` tells a part that takes a choice back, on which no model may act. `range_words`
writes the words joining a date range's ends ("til", "thru") the one way both date grammars
read, and `today_of` is the date relative dates count from: ``config.today``, else the real one.
`way_back` and `goes_back` tell a wish to go back to the criteria ("start over", "change my
dates") from a list, a package view or a comparison.
"""

from demo.reading.corrections import parts, settle, withdrawn
from demo.reading.ranges import range_words
from demo.reading.today import today_of
from demo.reading.way_back import corrects_a_number, goes_back, way_back

__all__ = [
    "corrects_a_number",
    "goes_back",
    "parts",
    "range_words",
    "settle",
    "today_of",
    "way_back",
    "withdrawn",
]
