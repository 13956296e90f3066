"""The reader copy published again after a write that is not a sync's commit (an HR plan or apply, a
tenant's label), so that readers see it without waiting for the next sync."""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb

from pipelines.settings import SettingsError, SyncSettings, load_settings
from warehouse.commit import writing
from warehouse.locks import LockBusyError
from warehouse.publish import Published, failed, try_publish

logger = logging.getLogger(__name__)


def republish(settings: SyncSettings, label: str) -> Published:
    """Publish the committed warehouse for readers, as the warehouse's one writer (waiting up to
    ``ADM_LOCK_WAIT_S`` for a sync's commit). Never raises: a publish that could not run or failed is the
    returned warning, the write it follows stands and readers keep the previous copy."""
    target = settings.publish_target
    try:
        with writing(settings.warehouse, label, settings.lock_wait_s) as con:
            return try_publish(con, target, label)
    except (duckdb.Error, LockBusyError, OSError) as error:
        return failed(target, label, error)


def republish_warehouse(warehouse: Path, label: str) -> Published | None:
    """`republish` for a write to ``warehouse`` by a command that was given its path (the HR workflow): the
    settings are ``ADM_*``'s with that warehouse; None (logged) when they cannot be read."""
    try:
        settings = load_settings()
    except SettingsError as error:
        logger.warning("%s: not published for readers: %s", label, error)
        return None
    return republish(settings.model_copy(update={"warehouse": warehouse}), label)
