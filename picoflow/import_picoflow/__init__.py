"""Bring PicoFlow (TypeScript) sessions over: convert their stored documents to picoflow's.

    from picoflow.import_picoflow import convert

    doc, report = convert(picoflow_doc, flow=HotelFlow)
    await store.create(doc)
    print(report.render())

Both stored shapes are read: PicoFlow 1.5 (one `flow` object, `revision`, `version: 1.5`) and
the older one (a `flows` array, `isActive` steps, `version: 1`). `convert` never guesses
silently: what it could not map is in `report.lost`, what it carried over in another form in
`report.changed`. The command line (`python -m picoflow.import_picoflow --help`) reads JSON
files or a MongoDB collection and writes JSON files or into a picoflow store.

This package is not imported by `import picoflow`; it is a migration tool.
"""

from __future__ import annotations

from picoflow.import_picoflow._convert import DEFAULT_RENAMES, convert
from picoflow.import_picoflow._report import ImportReport
from picoflow.import_picoflow._sources import read_json, read_mongo, write_files, write_store

__all__ = [
    "convert",
    "ImportReport",
    "DEFAULT_RENAMES",
    "read_json",
    "read_mongo",
    "write_files",
    "write_store",
]
