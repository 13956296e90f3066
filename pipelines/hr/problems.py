"""A problem found in an HR file: where it is (file, physical line, HR column) and which rule it breaks."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One broken rule. ``line`` is the physical line of the CSV file where the row starts (the header is
    line 1; 0 for a problem of the whole file); ``column`` is the HR column ("" for the whole row)."""

    file: str
    line: int
    column: str
    rule: str
    message: str

    def describe(self) -> str:
        """``column [rule] message``, for one cell of the error report."""
        where = f"{self.column} " if self.column else ""
        return f"{where}[{self.rule}] {self.message}"
