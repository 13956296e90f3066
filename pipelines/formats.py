"""The formats ``authority-sync sql`` writes a query's rows in (`pipelines.analytics.write_rows`)."""

from __future__ import annotations

from enum import StrEnum


class OutputFormat(StrEnum):
    """How ``authority-sync sql`` writes a query's rows."""

    TABLE = "table"
    CSV = "csv"
    JSON = "json"
