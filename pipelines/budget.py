"""What a tenant's syncs will cost in a month, before they run (``authority-sync budget``).

A run's calls follow from the tenant's sizes in the warehouse:

- a full refresh reads every list whole (n // 100 + 1 pages of 100 records: the last page, short or empty,
  says the list ends), the current user's positions (E9), the revision lists of records changed since the
  last run (as many as a nightly run finds), and its share of the rolling re-verification (1/N of each kind's
  lists, ``ADM_REVISION_RECHECK_DAYS`` = N);
- a nightly incremental run costs what the tenant's last incremental runs cost on average, apart from their
  re-verifications (its changes are the tenant's own), plus this share; with no incremental run yet, one
  page of each incremental list and every page of the others (and of those read whole on every run,
  `pipelines.extract.whole_reads`).

A month holds the runs the two schedules (``ADM_NIGHTLY_CRON``, ``ADM_FULL_REFRESH_CRON``) start in an average
month. Wall time is the calls at the plan's rate: the rate, not bandwidth, bounds a run on a real tenant.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pipelines.extract import PAGE_LIMIT, whole_reads
from pipelines.schedule_runs import runs_a_month
from pipelines.settings import SyncSettings
from resources.settings import MONTHLY_QUOTAS, PLAN_RATES_PER_MINUTE, RatePlan
from warehouse.catalog import LISTS
from warehouse.reads import TenantSizes

REVISION_ENDPOINTS = ("E11", "E12")
"""The endpoints of revision lists (delegations', documents')."""
FIXED_CALLS = 1
"""Calls every run makes whatever the tenant's size: the current user's positions (E9)."""


@dataclass(frozen=True)
class RunCalls:
    """The calls one run of each kind is projected to make."""

    full: int
    nightly: int


def run_calls(sizes: TenantSizes, recheck_days: int) -> RunCalls:
    """The projected calls of a full refresh and of a nightly incremental run of a tenant of ``sizes``."""
    share = sum(math.ceil(count / recheck_days) for count in sizes.revision_lists.values())
    pages = {entity: sizes.records.get(entity, 0) // PAGE_LIMIT + 1 for entity in LISTS}
    if sizes.nightly_calls:
        runs = len(sizes.nightly_calls)
        total = sum(sum(calls.values()) for calls in sizes.nightly_calls) / runs
        revisions = sum(calls.get(e, 0) for calls in sizes.nightly_calls for e in REVISION_ENDPOINTS) / runs
        changed = round(revisions - sum(sizes.nightly_rechecked) / runs)
        lists = round(total - revisions)
    else:
        changed = 0
        whole = whole_reads(sizes.records, applied_since_commit=False)
        lists = FIXED_CALLS + sum(
            1 if LISTS[e].source.incremental and e not in whole else pages[e] for e in LISTS
        )
    return RunCalls(full=sum(pages.values()) + FIXED_CALLS + changed + share, nightly=lists + changed + share)


@dataclass(frozen=True)
class MonthProjection:
    """One tenant's month under one plan."""

    plan: RatePlan
    quota: int
    rate_per_minute: float
    max_share: float
    calls: RunCalls
    full_runs: float
    nightly_runs: float

    @property
    def monthly_calls(self) -> int:
        """API calls a month."""
        return round(self.calls.full * self.full_runs + self.calls.nightly * self.nightly_runs)

    @property
    def share(self) -> float:
        """The month's calls as a share of the quota."""
        return self.monthly_calls / self.quota

    @property
    def over(self) -> bool:
        """Whether the month would pass the allowed share of the quota (``ADM_QUOTA_MAX_SHARE``)."""
        return self.share > self.max_share

    def minutes(self, calls: int | float) -> float:
        """Wall time of ``calls`` at the plan's rate, in minutes."""
        return calls / self.rate_per_minute

    def describe(self) -> str:
        """One line: the month's calls against the quota, and what each kind of run costs."""
        return (
            f"about {self.monthly_calls:,} API calls a month ({self.share:.0%} of the {self.plan.value} "
            f"quota of {self.quota:,}; the limit is {self.max_share:.0%}): {self.full_runs:.1f} full "
            f"refreshes of ~{self.calls.full:,} calls ({self.minutes(self.calls.full):.1f} min at "
            f"{self.rate_per_minute:g}/min), {self.nightly_runs:.1f} nightly runs of ~{self.calls.nightly:,}"
        )

    def as_metadata(self) -> dict[str, object]:
        """JSON-ready figures."""
        return {
            "plan": self.plan.value,
            "full_refresh_calls": self.calls.full,
            "nightly_calls": self.calls.nightly,
            "full_refreshes_a_month": round(self.full_runs, 2),
            "nightly_runs_a_month": round(self.nightly_runs, 2),
            "monthly_calls": self.monthly_calls,
            "quota": self.quota,
            "share": round(self.share, 4),
            "max_share": self.max_share,
            "full_refresh_minutes": round(self.minutes(self.calls.full), 1),
            "monthly_minutes": round(self.minutes(self.monthly_calls), 1),
        }


@dataclass(frozen=True)
class BudgetTerms:
    """What a month's projection assumes besides the tenant's sizes: the plan, the share of its quota a
    month may take, the re-verification window and the two schedules."""

    rate_plan: RatePlan
    quota: int
    """The configured plan's monthly calls (``ADM_MONTHLY_QUOTA`` when the contract differs)."""
    max_share: float
    recheck_days: int
    nightly_cron: str
    full_refresh_cron: str

    @classmethod
    def of(cls, settings: SyncSettings, tenant_id: str | None = None) -> BudgetTerms:
        """The terms the settings configure (for ``tenant_id``: its own plan and quota, where it has them)."""
        return cls(
            settings.rate_plan_of(tenant_id) if tenant_id else settings.rate_plan,
            settings.quota_of(tenant_id) if tenant_id else settings.quota,
            settings.quota_max_share,
            settings.revision_recheck_days,
            settings.nightly_cron,
            settings.full_refresh_cron,
        )


def project_month(sizes: TenantSizes, terms: BudgetTerms) -> list[MonthProjection]:
    """The tenant's month on each plan under the schedules of ``terms``; its plan first."""
    calls = run_calls(sizes, terms.recheck_days)
    full_runs, nightly_runs = runs_a_month(terms.full_refresh_cron), runs_a_month(terms.nightly_cron)
    plans = [terms.rate_plan, *(plan for plan in RatePlan if plan != terms.rate_plan)]
    return [
        MonthProjection(
            plan,
            terms.quota if plan == terms.rate_plan else MONTHLY_QUOTAS[plan],
            PLAN_RATES_PER_MINUTE[plan],
            terms.max_share,
            calls,
            full_runs,
            nightly_runs,
        )
        for plan in plans
    ]
