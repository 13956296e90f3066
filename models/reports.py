"""Reports: the body of E4, bulk status update, and its result (spec 2.9)."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import model_validator

from models.base import RequestModel, ServiceModel, UuidStr


class ReportStatus(StrEnum):
    """Report states (spec section 3)."""

    PUBLISHED = "PUBLISHED"
    ARCHIVED = "ARCHIVED"
    DELETED = "DELETED"
    DRAFT = "DRAFT"


class ReportOperation(StrEnum):
    """What E4 does to the listed reports."""

    UPDATE = "UPDATE"
    RESTORE = "RESTORE"


class UpdateReportStatuses(RequestModel):
    """Body of E4, ``POST /report/v1/report/bulk-status-update``: ``status`` is required for UPDATE."""

    report_ids: list[UuidStr]
    status: ReportStatus | None = None
    operation: ReportOperation

    @model_validator(mode="after")
    def _status_for_update(self) -> Self:
        if self.operation is ReportOperation.UPDATE and self.status is None:
            raise ValueError("status is required when operation is UPDATE")
        return self


class ReportStatusResult(ServiceModel):
    """The data of E4 (spec 2.9): reports not updated are listed in ``failedIds``."""

    success: bool
    updated_count: int
    failed_ids: list[str]
