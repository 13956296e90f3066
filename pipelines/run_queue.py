"""The instance's run queue (``pipelines/dagster.yaml``): Dagster's queue, which gives a partitioned run
its partition's tags before it queues.

Dagster adds a partition's tags (`pipelines.tenant_tags`: ``adm/tenant``, ``adm/tenant_name``) only
where the launcher asks the code location for them: a schedule's or a sensor's run request, a job's
backfill, the launchpad. A run launched through GraphQL (``launchRun``,
``DagsterGraphQLClient.submit_job_execution``) with only the ``dagster/partition`` tag would carry no
tenant, and the per-tenant limit of the queue and the runs list's tenant filter would miss it; so would a
run of Dagster's implicit asset job (the asset catalog's Materialize, an asset backfill), whose partitions
carry no tags of their own. Every run a webserver or the daemon launches is submitted here, so asking the
code location here covers all of them: the tags the run's job gives its partition, or for the implicit
asset job those the tenant sync's job gives it.
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg
from dagster._core.definitions.selector import RepositorySelector
from dagster._core.remote_representation.code_location import is_implicit_asset_job_name
from dagster._core.remote_representation.external_data import PartitionTagsSnap
from dagster._core.storage.tags import PARTITION_NAME_TAG, SYSTEM_TAG_PREFIX

from pipelines.tenant_runs import NIGHTLY_JOB


class TenantRunCoordinator(dg.QueuedRunCoordinator):
    """Dagster's run queue; a run of a partition gets the tags the job gives that partition (those it
    lacks or that differ) before it is queued, so the queue's tag limits see them."""

    def submit_run(self, context: dg.SubmitRunContext) -> dg.DagsterRun:
        """Tag the run with its partition's tags, then queue it."""
        run = context.dagster_run
        missing = {
            key: value for key, value in _partition_tags(context).items() if run.tags.get(key) != value
        }
        if missing:
            self._instance.add_run_tags(run.run_id, missing)
        return super().submit_run(context)


def _partition_tags(context: dg.SubmitRunContext) -> Mapping[str, str]:
    """The tags the run's job gives its partition (the tenant sync's job, for Dagster's implicit asset job),
    not Dagster's own (``dagster/partition_set`` would name the wrong job); none when it has no partition,
    or one the job does not know (the run's step refuses it in one line)."""
    run = context.dagster_run
    partition = run.tags.get(PARTITION_NAME_TAG)
    origin = run.remote_job_origin
    if partition is None or origin is None:
        return {}
    repository = origin.repository_origin
    snap = context.workspace.get_partition_tags(
        RepositorySelector(
            location_name=repository.code_location_origin.location_name,
            repository_name=repository.repository_name,
        ),
        NIGHTLY_JOB if is_implicit_asset_job_name(run.job_name) else run.job_name,
        partition,
        context.workspace.instance,
        selected_asset_keys=None,
    )
    tags = snap.tags if isinstance(snap, PartitionTagsSnap) else {}
    return {key: str(value) for key, value in tags.items() if not key.startswith(SYSTEM_TAG_PREFIX)}
