"""A realistic HR export of the emulator's seeded tenant: the demo's sample files and the benchmark's input.

`export_users` and `export_groups` show a seeded tenant the way an HR system would export it (HR status
words, dates without time, departments by org-unit id, an extra column the sync ignores). The demo files
add a month of HR events on top: promotions, manager changes, transfers, terminations, an email change,
a role removal, a new hire, a renamed and a re-parented department, a new department, and a few rows HR
got wrong. Everything is derived from ``seed_tenant`` and a seeded generator, so the output is the same
bytes every time; `tests/test_hr_cli.py` checks the committed samples against it.

Regenerate the samples with ``python -m pipelines.hr.demo_export``.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from pathlib import Path

from emulator.scale import DEMO_TENANT_ID, OTHER_TENANT_ID, Scale
from emulator.seed import seed_tenant
from emulator.state import Record, TenantState
from pipelines.hr.mapping import SAMPLES, GroupMapping, UserMapping, load_mapping

SEED = 42
LABEL = "Acme"
"""The label the emulator seeds its demo tenant with (emails end in ``@acme.example.com``)."""
USER_FIELDS_ORDER = (
    "tenant",
    "employee_id",
    "first_name",
    "last_name",
    "email",
    "mobile_phone",
    "positions",
    "groups",
    "manager",
    "status",
    "start_date",
    "termination_date",
    "employee_type",
    "employment_type",
    "roles",
)
GROUP_FIELDS_ORDER = ("tenant", "external_id", "group_name", "legal_name", "parent", "status")
USER_EXTRA, GROUP_EXTRA = "Cost Center", "Org Unit Type"
"""Columns HR exports carry that the mapping leaves out: ignored by the sync, kept in error reports."""
HR_STATUS = {"ACTIVE": "Active", "INVITED": "Active", "INACTIVE": "Inactive", "DELETED": "Terminated"}
TERMINATION_DAY = "2025-12-31"

Row = dict[str, str]


def export_users(state: TenantState) -> list[Row]:
    """Every user of ``state`` as an HR row (field -> cell), by employee id."""
    return sorted(
        (_user_row(state, user) for user in state.users.values()), key=lambda row: row["employee_id"]
    )


def _user_row(state: TenantState, user: Record) -> Row:
    manager = state.manager_of[user["id"]]
    return {
        "tenant": state.tenant_id,
        "employee_id": user["employeeId"],
        "first_name": user["firstName"],
        "last_name": user["lastName"],
        "email": user["email"],
        "mobile_phone": user["mobilePhone"],
        "positions": ";".join(link["positionName"] for link in user["userPositions"]),
        "groups": ";".join(state.groups[link["groupId"]]["externalId"] for link in user["userGroups"]),
        "manager": "" if manager == user["id"] else state.users[manager]["employeeId"],
        "status": HR_STATUS[user["status"]],
        "start_date": user["startDate"][:10],
        "termination_date": (user["terminationDate"] or "")[:10],
        "employee_type": user["employeeType"],
        "employment_type": user["employmentType"],
        "roles": ";".join(link["roleName"] for link in user["userRoles"]),
        USER_EXTRA: user["customAttributes"]["costCenter"],
    }


def export_groups(state: TenantState) -> list[Row]:
    """Every group of ``state`` as an HR org-unit row, by external id."""
    rows = []
    for group_id, group in state.groups.items():
        parents = [state.groups[link.parent_id]["externalId"] for link in state.group_parents[group_id]]
        rows.append(
            {
                "tenant": state.tenant_id,
                "external_id": group["externalId"],
                "group_name": group["groupName"],
                "legal_name": group["legalName"],
                "parent": ";".join(parents),
                "status": "Active" if group["status"] == "ACTIVE" else "Inactive",
                GROUP_EXTRA: state.group_types[group["tenantGroupTypeId"]]["groupTypeName"],
            }
        )
    return sorted(rows, key=lambda row: row["external_id"])


def write_export(
    path: Path, rows: list[Row], mapping: UserMapping | GroupMapping, order: tuple[str, ...], extra: str
) -> Path:
    """Write rows the way HR systems do: every field quoted, CRLF line ends, the mapping's headers."""
    header = [mapping.columns[name] for name in order] + [extra]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8-sig" if mapping.kind == "user" else "utf-8", newline="") as handle:
        writer = csv.writer(handle, quoting=csv.QUOTE_ALL)
        writer.writerow(header)
        writer.writerows([row.get(name, "") for name in (*order, extra)] for row in rows)
    return path


# -- the demo's month of HR events ----------------------------------------------------------------------


class _Events:
    """Applies HR events to exported rows, each to a different employee drawn from a seeded generator."""

    def __init__(self, state: TenantState, rows: list[Row]) -> None:
        self.state = state
        self.rows = {row["employee_id"]: row for row in rows}
        self.rng = random.Random(f"hr-demo:{SEED}")
        managers = {state.users[key]["employeeId"] for key in state.manager_of.values()}
        self.pool = [
            row["employee_id"]
            for row in rows
            if row["status"] == "Active" and row["manager"] and row["employee_id"] not in managers
        ]
        self.rng.shuffle(self.pool)

    def take(self, where: Callable[[Row], bool] = lambda row: True) -> Row:
        """A not-yet-used active employee who manages nobody (so no event strands their reports)."""
        key = next(key for key in reversed(self.pool) if where(self.rows[key]))
        self.pool.remove(key)
        return self.rows[key]

    def apply(self, count: int, event: Callable[[Row], None]) -> None:
        """Apply ``event`` to ``count`` different employees."""
        for _ in range(count):
            event(self.take())

    def promote(self, row: Row) -> None:
        """A new job title."""
        names = sorted(record["positionName"] for record in self.state.positions.values())
        row["positions"] = self.rng.choice([name for name in names if name != row["positions"]])

    def new_manager(self, row: Row) -> None:
        """A new manager."""
        # A manager with a lower employee number who is active: the seeded tree only points that way,
        # so the change cannot close a cycle.
        candidates = [
            key
            for key, other in self.rows.items()
            if key < row["employee_id"] and other["status"] == "Active"
        ]
        row["manager"] = self.rng.choice([key for key in candidates if key != row["manager"]])

    def transfer(self, row: Row) -> None:
        """A move to another department."""
        departments = sorted(group["externalId"] for group in self.state.groups.values())
        row["groups"] = self.rng.choice([key for key in departments if key != row["groups"]])

    def terminate(self, row: Row) -> None:
        """A termination at the end of the year."""
        row["status"], row["termination_date"] = "Terminated", TERMINATION_DAY


def demo_users(state: TenantState) -> list[Row]:
    """The demo's users export: the seeded users after a month of HR events, plus a few bad rows."""
    rows = export_users(state)
    events = _Events(state, rows)
    events.apply(4, events.promote)
    events.apply(4, events.new_manager)
    events.apply(4, events.transfer)
    events.apply(3, events.terminate)
    moved = events.take()
    moved["email"] = moved["email"].replace("@acme.example.com", "@acme-group.example.com")
    dropped = events.take(lambda row: ";" in row["roles"])
    dropped["roles"] = dropped["roles"].split(";")[0]
    _mistakes(events)
    hire = dict(rows[-1], employee_id=f"E{100000 + len(rows)}", first_name="Nora", last_name="Lindqvist")
    hire.update(
        email="nora.lindqvist@acme.example.com", start_date="2026-01-05", manager=rows[1]["employee_id"]
    )
    return [*rows, hire]


def _mistakes(events: _Events) -> None:
    """Rows HR got wrong: each breaks one rule and lands in the error report."""
    events.take()["last_name"] = "Vandenberghe-Oosterhuis"
    events.take()["email"] = "sara.okafor.at.acme.example.com"
    events.take()["manager"] = "E199999"
    events.take()["first_name"] = '=HYPERLINK("http://evil.example","Fix me")'
    events.take().update(status="Terminated", termination_date="2001-01-01")
    events.take()["tenant"] = OTHER_TENANT_ID
    events.take()["positions"] = "Chief Vibes Officer"


def demo_groups(state: TenantState) -> list[Row]:
    """The demo's org-units export: one department renamed, one moved to another region, one new
    department, and one new unit under a parent that does not exist."""
    rows = export_groups(state)
    by_key = {row["external_id"]: row for row in rows}
    departments = [row for row in rows if row[GROUP_EXTRA] == "Department"]
    renamed, moved = departments[0], departments[1]
    renamed["group_name"] = f"{renamed['group_name']} & Risk"
    regions = [row["external_id"] for row in rows if row[GROUP_EXTRA] == "Region"]
    moved["parent"] = next(region for region in regions if region != moved["parent"])
    region = by_key[regions[1]]
    new = dict(region, external_id=f"ORG-{len(rows) + 1:04d}", group_name="Sustainability EMEA")
    new.update(legal_name="Sustainability EMEA", parent=region["external_id"], **{GROUP_EXTRA: "Department"})
    stray = dict(new, external_id=f"ORG-{len(rows) + 2:04d}", group_name="Innovation Lab", parent="ORG-0999")
    return [*rows, new, stray]


def write_demo_export(folder: Path = SAMPLES) -> tuple[Path, Path]:
    """Write ``demo_users.csv`` and ``demo_groups.csv`` for seed 42 at the default scale."""
    state = seed_tenant(SEED, DEMO_TENANT_ID, Scale(), LABEL)
    mapping = load_mapping()
    users = write_export(
        folder / "demo_users.csv", demo_users(state), mapping.users, USER_FIELDS_ORDER, USER_EXTRA
    )
    groups = write_export(
        folder / "demo_groups.csv", demo_groups(state), mapping.groups, GROUP_FIELDS_ORDER, GROUP_EXTRA
    )
    return users, groups


# -- the benchmark's input ------------------------------------------------------------------------------


def benchmark_users_csv(
    path: Path,
    rows: int = 10_000,
    changed_share: float = 0.05,
    *,
    scale: Scale | None = None,
    seed: int = SEED,
    tenant_id: str = DEMO_TENANT_ID,
) -> Path:
    """An ``rows``-row HR users export of the emulator's seeded tenant (at ``scale``, default ``rows``
    users) in which ``changed_share`` of the rows change a job title, a department or a last name. Only
    the department changes (transfers, kind ``group``) are watched by a safety threshold: lift it to apply
    a large file. Returns ``path``."""
    state = seed_tenant(seed, tenant_id, scale or Scale(users=rows), LABEL)
    exported = export_users(state)[:rows]
    events = _Events(state, exported)
    rng = random.Random(f"hr-bench:{seed}")
    changes = (events.promote, events.transfer, _rename)
    for index in sorted(rng.sample(range(len(exported)), round(len(exported) * changed_share))):
        changes[index % len(changes)](exported[index])
    return write_export(path, exported, load_mapping().users, USER_FIELDS_ORDER, USER_EXTRA)


def _rename(row: Row) -> None:
    row["last_name"] = f"{row['last_name']}-Hale"[:20]


if __name__ == "__main__":
    write_demo_export()
