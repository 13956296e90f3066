"""The dlt peer of the nightly extract: a ``rest_api`` source over the same endpoints, as its docs advise.

Run ``python -m benchmarks.dlt_pipeline --base-url URL --token T --tenant-id ID --workdir DIR``; the
benchmark harness does. Ends by printing one line ``BENCH_RESULT {json}`` with the rows it loaded.

How it is configured, and why (each choice is the one the dlt docs give for such an API):

- One ``rest_api`` config: the service's base address and bearer token, ``data.data`` as data selector,
  100 records a page (the service's maximum).
- Pagination by page number. The service's ``total`` counts *items*, while dlt's ``page_number`` paginator
  reads ``total_path`` as a count of *pages*; so the lists get a small custom paginator (the docs' way for a
  paging scheme dlt has no class for) that asks for pages 1..ceil(total / limit) and no more.
- Decisions, delegations, users and groups are loaded incrementally (``incremental`` with ``cursor_path``
  on their updated-at field and ``start_param`` the service's ``updatedAtStart`` filter), merged on ``id``.
  Positions have no such filter and are replaced.
- Revision ids are dependent resources: E11 per delegation (``resolve`` on the delegation's id) and E12 per
  document. Document ids live inside decisions (``decisionDocuments``), so a small transformer yields each
  distinct one, and the E12 resource resolves on it. Both are ``parallelized`` (the docs' option to fetch
  child data of many parents concurrently) and carry their parent's id (``include_from_parent``).
- Parallelism: every resource is ``parallelized`` and ``extract.workers`` is the concurrency the nightly
  sync gets (16), so both contenders may keep as many requests in flight. Loading uses Parquet files, as
  the DuckDB destination's docs suggest over its default ``insert_values`` ("loading is faster"); normalize
  and load workers keep dlt's defaults.
- E11/E12 answer a bare JSON array of strings, and dlt needs objects to attach the parent's id to: a
  response action (the docs' hook for reshaping a body) turns each id into ``{"revision_id": id}``.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dlt
from dlt.sources.helpers.rest_client.paginators import BasePaginator
from dlt.sources.rest_api import rest_api_resources
from dlt.sources.rest_api.typing import EndpointResource, RESTAPIConfig

PAGE_LIMIT = 100
EPOCH = "2000-01-01T00:00:00.000Z"
"""Initial cursor value of the incremental lists: before every record."""
DEFAULT_WORKERS = 16
PIPELINE = "adm_dlt"
DATASET = "adm"


class TotalItemsPaginator(BasePaginator):
    """Pages 1..ceil(total / limit) of a list whose ``data.total`` counts items (not pages)."""

    def __init__(self, limit: int = PAGE_LIMIT) -> None:
        super().__init__()
        self.limit = limit
        self.page = 1

    def init_request(self, request: Any) -> None:
        """Start at page 1."""
        self.page = 1
        self._has_next_page = True
        self.update_request(request)

    def update_state(self, response: Any, data: list[Any] | None = None) -> None:
        """Stop after the page that holds the last item (or an empty page)."""
        total = int(response.json()["data"]["total"])
        self._has_next_page = bool(data) and self.page * self.limit < total
        self.page += 1

    def update_request(self, request: Any) -> None:
        """Ask for the current page."""
        request.params = {**(request.params or {}), "page": self.page}


def incremental_list(
    name: str, path: str, cursor: str, extra: dict[str, Any] | None = None
) -> EndpointResource:
    """A paged list loaded incrementally on its updated-at field and merged on ``id``."""
    return {
        "name": name,
        "primary_key": "id",
        "write_disposition": "merge",
        "endpoint": {
            "path": path,
            "params": {"limit": PAGE_LIMIT, **(extra or {})},
            "incremental": {"start_param": "updatedAtStart", "cursor_path": cursor, "initial_value": EPOCH},
        },
    }


def revisions(name: str, path: str, parent: str) -> EndpointResource:
    """Revision ids of each record of ``parent`` (a dependent resource, fetched in parallel)."""
    return {
        "name": name,
        "parallelized": True,
        "write_disposition": "merge",
        "primary_key": [f"_{parent}_id", "revision_id"],
        "include_from_parent": ["id"],
        "endpoint": {
            "path": path,
            "paginator": "single_page",
            "data_selector": "$",
            "response_actions": [{"status_code": 200, "action": revision_objects}],
        },
    }


def revision_objects(response: Any, *args: Any, **kwargs: Any) -> Any:
    """Reshape a bare array of revision ids into objects, so each row can carry its parent's id."""
    response._content = json.dumps([{"revision_id": value} for value in response.json()]).encode()
    return response


def config(base_url: str, token: str, tenant_id: str) -> RESTAPIConfig:
    """The rest_api configuration of the lists and of the delegation revisions."""
    return {
        "client": {
            "base_url": base_url,
            "auth": {"type": "bearer", "token": token},
            "paginator": TotalItemsPaginator(),
        },
        "resource_defaults": {"parallelized": True, "endpoint": {"data_selector": "data.data"}},
        "resources": [
            incremental_list("decisions", "/decision/v1/decisions", "updatedAt"),
            incremental_list("delegations", "/decision/v1/delegations", "updatedAt"),
            incremental_list("users", "/auth/v1/user", "updatedOn"),
            incremental_list("groups", "/settings/v1/groups", "updatedOn", {"tenantId": tenant_id}),
            {
                "name": "positions",
                "write_disposition": "replace",
                "endpoint": {
                    "path": "/settings/v1/positions",
                    "params": {"limit": PAGE_LIMIT, "tenantId": tenant_id},
                },
            },
            revisions(
                "delegation_revisions",
                "/decision/v1/delegations/{resources.delegations.id}/changelog/revision-ids",
                "delegations",
            ),
        ],
    }


def document_config(base_url: str, token: str, documents: Any) -> RESTAPIConfig:
    """The rest_api configuration of the document revisions, resolved on the ``documents`` transformer."""
    return {
        "client": {"base_url": base_url, "auth": {"type": "bearer", "token": token}},
        "resources": [
            documents,
            revisions(
                "document_revisions",
                "/document/v1/documents/{resources.documents.id}/changelog/revision-ids",
                "documents",
            ),
        ],
    }


def source_resources(base_url: str, token: str, tenant_id: str) -> list[Any]:
    """Every resource of the peer: the lists, the documents transformer and both revision resources."""
    resources = {
        resource.name: resource for resource in rest_api_resources(config(base_url, token, tenant_id))
    }
    seen: set[str] = set()

    @dlt.transformer(data_from=resources["decisions"], name="documents", selected=False)
    def documents(page: list[dict[str, Any]]) -> Iterator[list[dict[str, str]]]:
        """Each document a decision of this run refers to, once."""
        fresh = []
        for decision in page:
            for link in decision.get("decisionDocuments") or []:
                if link["documentId"] not in seen:
                    seen.add(link["documentId"])
                    fresh.append({"id": link["documentId"]})
        if fresh:
            yield fresh

    document_resources = rest_api_resources(document_config(base_url, token, documents))
    return [*resources.values(), *document_resources]


def main() -> None:
    """Run the pipeline once (incrementally after the first run in the same working folder)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--tenant-id", required=True)
    parser.add_argument("--workdir", type=Path, required=True, help="pipelines folder and DuckDB file")
    parser.add_argument("--workers", type=int, default=DEFAULT_WORKERS, help="extract.workers")
    arguments = parser.parse_args()
    os.environ.setdefault("EXTRACT__WORKERS", str(arguments.workers))
    os.environ.setdefault("EXTRACT__MAX_PARALLEL_ITEMS", str(max(20, arguments.workers * 2)))
    arguments.workdir.mkdir(parents=True, exist_ok=True)
    pipeline = dlt.pipeline(
        pipeline_name=PIPELINE,
        pipelines_dir=str(arguments.workdir / "pipelines"),
        destination=dlt.destinations.duckdb(str(arguments.workdir / "dlt.duckdb")),
        dataset_name=DATASET,
    )
    resources = source_resources(arguments.base_url, arguments.token, arguments.tenant_id)
    pipeline.run(resources, loader_file_format="parquet")
    trace = pipeline.last_trace
    counts = trace.last_normalize_info.row_counts if trace and trace.last_normalize_info else {}
    tables = {name: count for name, count in counts.items() if not name.startswith("_dlt")}
    print("BENCH_RESULT " + json.dumps({"rows": sum(tables.values()), "tables": tables}))


if __name__ == "__main__":
    main()
