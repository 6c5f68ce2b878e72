"""The records of a report: `Report` (a title, when it was made, its sections) and
`Section`, one block of figures. `content` builds them from result records, `html`
renders them, and the JSON sidecar is `codec.encode(report)`, so every figure shown is
one in the sidecar.

A table cell is a string or {"value": number, "text": how it is shown} (`content.number`).
"""
import dataclasses
from typing import Any, Dict, List, Optional


@dataclasses.dataclass(frozen=True)
class Section:
    """One block of the page.

    Attributes:
      kind: 'facts' (`facts`: name → value), 'table' (`columns`, `rows`), 'text'
        (`text`) or 'image' (`series`: name → [[x, y], ...], drawn with `xlabel`, `ylabel`).
      note: a line under the block ('' for none).
      projection: figures projected, not measured (the page marks the block so).
    """
    id: str
    title: str
    kind: str
    note: str = ""
    facts: Optional[Dict[str, Any]] = None
    columns: Optional[List[str]] = None
    rows: Optional[List[List[Any]]] = None
    text: Optional[str] = None
    series: Optional[Dict[str, List[Any]]] = None
    xlabel: str = "step"
    ylabel: str = ""
    projection: bool = False


@dataclasses.dataclass(frozen=True)
class Report:
    title: str
    made: str
    sections: List[Section]
