"""Stale exports: an HR file knows the world as of when it was exported, and the service may have moved on
since (a termination entered in the service, an earlier upload applied).

**As of when.** A row's as-of time is its as-of cell (the mapping's optional ``as_of`` column: an ISO
date and time, or a date, then its start), else its file's: ``--as-of`` (``hr plan``), else the file's
modification time, which HR systems and copies that keep it (``cp -p``, rsync, a mail client's save) set
to when the export was written.

**Rows.** A row that would change a record the service changed after the row's as-of time is refused
(``stale_row``) and not planned: it would put back what the service changed since (last month's export
reactivating people terminated this week). A row that would change nothing is no problem, however old.

**Files.** An export older than ``[plan] max_export_age_hours`` (as of its newest row) is refused as a
whole (``stale_export``) unless ``--allow-old-export`` is given; unattended runs never give it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from models.hr.fields import differs
from pipelines.hr.csv_input import CsvFile
from pipelines.hr.mapping import AS_OF_FIELD, EntityMapping
from pipelines.hr.problems import Problem
from pipelines.hr.rows import HrRow
from pipelines.hr.snapshot import Snapshot

STALE_ROW = "stale_row"
STALE_EXPORT = "stale_export"


@dataclass(frozen=True)
class ExportTimes:
    """When each file of an upload was exported, and how old an export may be (None: any age)."""

    as_of: Mapping[str, datetime]
    """File name -> its as-of time."""
    source: str
    """Where the files' as-of times come from, as people read it: ``--as-of``, ``modification time``."""
    now: datetime
    max_age: timedelta | None

    @classmethod
    def of(
        cls, files: list[CsvFile], given: datetime | None, now: datetime, max_age: timedelta | None
    ) -> ExportTimes:
        """The as-of time of each file: ``given`` (``--as-of``), else its modification time."""
        if given is not None:
            return cls(dict.fromkeys((file.name for file in files), given), "--as-of", now, max_age)
        return cls(
            {file.name: _modified(file) for file in files}, "the file's modification time", now, max_age
        )


def _modified(file: CsvFile) -> datetime:
    try:
        return datetime.fromtimestamp(file.path.stat().st_mtime, UTC)
    except OSError:  # unreadable: the file is refused for that already
        return datetime.now(UTC)


def old_exports(files: list[CsvFile], rows: list[HrRow], times: ExportTimes) -> list[Problem]:
    """A ``stale_export`` problem per file exported longer ago than allowed (as of its newest row)."""
    if times.max_age is None:
        return []
    problems = []
    for file in files:
        moments = [row.as_of for row in rows if row.file == file.name and row.as_of]
        exported = max(moments) if moments else times.as_of.get(file.name)
        if exported is None or times.now - exported <= times.max_age:
            continue
        source = "its as-of column" if moments else times.source
        hours = times.max_age / timedelta(hours=1)
        message = (
            f"exported {_shown(exported)} ({source}), {_age(times.now - exported)} ago: older than [plan] "
            f"max_export_age_hours ({hours:g} h); export it again, or plan it with --allow-old-export"
        )
        problems.append(Problem(file.name, 0, "", STALE_EXPORT, message))
    return problems


def stale_rows(rows: list[HrRow], mapping: EntityMapping, snapshot: Snapshot, times: ExportTimes) -> None:
    """Refuse each row that would change a record the service changed after the row was exported."""
    values = snapshot.user_values if mapping.kind == "user" else snapshot.group_values
    for row in rows:
        if not row.entity_id or not row.valid:
            continue
        exported = row.as_of or times.as_of.get(row.file)
        changed = snapshot.changed_on(row.kind, row.entity_id)
        if exported is None or changed is None or changed <= exported:
            continue
        current = values[row.entity_id]
        if any(differs(row.kind, name, current[name], after) for name, after in row.desired.items()):
            message = (
                f"exported {_shown(exported)}, before the service last changed this {row.kind} "
                f"({_shown(changed)}): planned, it would undo that change; export it again"
            )
            row.problem(mapping, AS_OF_FIELD, STALE_ROW, message)


def _shown(moment: datetime) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M} UTC"


def _age(span: timedelta) -> str:
    hours = span / timedelta(hours=1)
    return f"{hours:.0f} h" if hours < 48 else f"{hours / 24:.0f} days"
