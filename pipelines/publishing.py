"""The reader copy published again after a write that is not a sync's commit (an HR plan or apply), so
that readers see it without waiting for the next sync."""

from __future__ import annotations

import duckdb

from pipelines.warehouse_resource import WarehouseResource
from warehouse.commit import writing
from warehouse.locks import LockBusyError
from warehouse.publish import Published, failed, try_publish


def republish(store: WarehouseResource, label: str) -> Published:
    """Publish the committed warehouse for readers, as the warehouse's one writer (waiting up to its
    ``lock_wait_s`` for a sync's commit). Never raises: a publish that could not run or failed is the
    returned warning, the write it follows stands and readers keep the previous copy."""
    target = store.publish_target
    try:
        with writing(store.file, label, store.lock_wait_s) as con:
            return try_publish(con, target, label)
    except (duckdb.Error, LockBusyError, OSError) as error:
        return failed(target, label, error)
