"""Positions: the record of the position-list extension, ``GET /settings/v1/positions``."""

from __future__ import annotations

from models.base import Timestamp
from models.matrices import PositionDetails


class Position(PositionDetails):
    """One item of the position list (public-reference.md extension).

    Assumption: the record is not shown anywhere; it is taken to have the shape of a matrix's
    ``positionDetails`` (spec 2.11), plus ``createdOn``/``updatedOn`` when the service sends them.
    """

    created_on: Timestamp | None = None
    updated_on: Timestamp | None = None
