"""Notifications (spec 2.13) and the bodies and results of E13 and E14."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from models.base import RequestModel, ServiceModel, Timestamp


class NotificationStatus(StrEnum):
    """Notification states (spec section 3)."""

    UNREAD = "UNREAD"
    READ = "READ"


class Notification(ServiceModel):
    """A notification (spec 2.13); ``payload`` is free-form key/value data."""

    id: str
    tenant_id: str
    user_id: str
    template_key: str
    category: str
    title: str
    message: str
    is_actionable: bool
    status: NotificationStatus
    created_at: Timestamp
    read_at: Timestamp
    entity_type: str
    entity_id: str
    relative_time: str
    action_url: str
    payload: dict[str, Any]


class ToggleNotificationStatus(RequestModel):
    """Body of E13, ``PATCH /notification/v1/notifications/{id}/toggle-status``.

    Assumption (public-reference.md): without ``status`` the notification flips between READ and UNREAD.
    """

    status: NotificationStatus | None = None


class MarkAllReadResult(ServiceModel):
    """The data of E14, ``POST /v1/notifications/mark-all-read``: how many notifications were marked."""

    count: int
