"""E8 list decisions (every filter, sort, projection, paging rule and edge), E11/E12 revision ids and the four
list extensions. Expectations are computed from the emulator's in-memory records, independently of the
routes' own search code."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import pytest

from emulator.state import TenantState
from models.decisions import DecisionProjection
from models.queries import DecisionField
from tests.conftest import DEMO_TENANT_ID, Params, data_of, error_of, fetch_all

DECISIONS = "/decision/v1/decisions"
UNKNOWN = str(uuid.UUID(int=11, version=4))

Record = dict[str, Any]
Keep = Callable[[Record], bool]


def decision_ids(client: httpx.Client, params: Params) -> list[str]:
    """The ids of every decision E8 selects, in order, through every page (projected to ids: smaller)."""
    pairs = list(params.items()) if isinstance(params, Mapping) else list(params)
    return [record["id"] for record in fetch_all(client, DECISIONS, [*pairs, ("fields", "DECISION_ID")])]


def default_order(records: list[Record]) -> list[str]:
    """E8's default order: newest ``createdAt`` first, ties by id, also descending."""
    return [r["id"] for r in sorted(records, key=lambda r: (r["createdAt"], r["id"]), reverse=True)]


def limit_number(value: str) -> float:
    """An authority limit value as a number; ``Unlimited`` is above every number."""
    return math.inf if value == "Unlimited" else float(value)


def has_limit(kind: str, low: str, high: str) -> Keep:
    """Keeps decisions with an authority of ``kind`` whose value lies in [low, high]."""

    def keep(record: Record) -> bool:
        return any(
            authority["authorityLimitValueType"] == kind
            and limit_number(low) <= limit_number(authority["authorityLimitValue"]) <= limit_number(high)
            for authority in record["decisionAuthorities"]
        )

    return keep


def nested(key: str, item_key: str, values: set[str]) -> Keep:
    """Keeps decisions with any item of ``key`` whose ``item_key`` is one of ``values``."""
    return lambda record: any(item[item_key] in values for item in record[key])


def filter_cases(demo: TenantState) -> dict[str, tuple[dict[str, str], Keep]]:
    """Each E8 filter by case name: its query parameters and which decisions it must keep."""
    records = list(demo.decisions.values())
    picked = [records[3], records[10], records[500]]
    sections = sorted({r["sectionId"] for r in records})[:2]
    categories = sorted({r["categoryId"] for r in records})[:2]
    groups = [records[0]["decisionGroups"][0]["groupId"], records[1]["decisionGroups"][0]["groupId"]]
    authority_type = records[2]["decisionAuthorities"][2]["authorityTypeId"]
    owners = [records[5]["owner"], records[6]["owner"]]
    created = sorted(r["createdAt"] for r in records)
    updated = sorted(r["updatedAt"] for r in records)
    issued_by_users = {d["decisionId"] for d in demo.delegations.values() if d["issuerType"] == "USER"}
    currency_to_unlimited = [
        {"authorityLimitValueType": "Currency", "minValue": "250000", "maxValue": "Unlimited"}
    ]
    two_limits = [
        {"authorityLimitValueType": "Currency", "minValue": "25000"},
        {"authorityLimitValueType": "Days", "maxValue": "20"},
    ]
    return {
        "decisionIds": (
            {"decisionIds": ",".join(r["id"] for r in picked)},
            lambda r: r["id"] in {p["id"] for p in picked},
        ),
        "status": ({"status": "DRAFT,ARCHIVED"}, lambda r: r["status"] in ("DRAFT", "ARCHIVED")),
        "search in name or description": (
            {"search": "TREASURY"},
            lambda r: "treasury" in r["name"].lower() or "treasury" in r["description"].lower(),
        ),
        "search by display id": ({"search": "100042"}, lambda r: "100042" in r["decisionDisplayId"]),
        "sectionIds": ({"sectionIds": ",".join(sections)}, lambda r: r["sectionId"] in sections),
        "categoryIds": ({"categoryIds": ",".join(categories)}, lambda r: r["categoryId"] in categories),
        "groupIds": ({"groupIds": ",".join(groups)}, nested("decisionGroups", "groupId", set(groups))),
        "delegable true": ({"delegable": "true"}, lambda r: r["delegable"] is True),
        "delegable false": ({"delegable": "false"}, lambda r: r["delegable"] is False),
        "delegations true": ({"delegations": "true"}, lambda r: r["delegations"] > 0),
        "delegations false": ({"delegations": "false"}, lambda r: r["delegations"] == 0),
        "authorityTypeIds": (
            {"authorityTypeIds": authority_type},
            nested("decisionAuthorities", "authorityTypeId", {authority_type}),
        ),
        "authorityLimitValueTypes": (
            {"authorityLimitValueTypes": "Days,Years"},
            nested("decisionAuthorities", "authorityLimitValueType", {"Days", "Years"}),
        ),
        "limit filter up to Unlimited": (
            {"authorityLimitValueFilters": json.dumps(currency_to_unlimited)},
            has_limit("Currency", "250000", "Unlimited"),
        ),
        "limit filter bounded": (
            {"authorityLimitValueFilters": json.dumps([{**currency_to_unlimited[0], "maxValue": "1000000"}])},
            has_limit("Currency", "250000", "1000000"),
        ),
        "limit filter only Unlimited": (
            {
                "authorityLimitValueFilters": json.dumps(
                    [{"authorityLimitValueType": "Currency", "minValue": "Unlimited"}]
                )
            },
            lambda r: any(a["authorityLimitValue"] == "Unlimited" for a in r["decisionAuthorities"]),
        ),
        "two limit filters": (
            {"authorityLimitValueFilters": json.dumps(two_limits)},
            lambda r: has_limit("Currency", "25000", "Unlimited")(r) and has_limit("Days", "-inf", "20")(r),
        ),
        "issuerType": ({"issuerType": "USER"}, lambda r: r["id"] in issued_by_users),
        "ownerUserIds": ({"ownerUserIds": ",".join(owners)}, lambda r: r["owner"] in owners),
        "createdAt range": (
            {"createdAtStart": created[100], "createdAtEnd": created[299]},
            lambda r: created[100] <= r["createdAt"] <= created[299],
        ),
        "updatedAt from": ({"updatedAtStart": updated[900]}, lambda r: r["updatedAt"] >= updated[900]),
        "updatedAt range": (
            {"updatedAtStart": updated[10], "updatedAtEnd": updated[20]},
            lambda r: updated[10] <= r["updatedAt"] <= updated[20],
        ),
        "filters combine with AND": (
            {"status": "PUBLISHED", "delegable": "true", "sectionIds": sections[0]},
            lambda r: r["status"] == "PUBLISHED" and r["delegable"] and r["sectionId"] == sections[0],
        ),
        "tenantId of the caller": (
            {"tenantId": DEMO_TENANT_ID, "status": "ARCHIVED"},
            lambda r: r["status"] == "ARCHIVED",
        ),
    }


FILTER_CASES = [
    "decisionIds",
    "status",
    "search in name or description",
    "search by display id",
    "sectionIds",
    "categoryIds",
    "groupIds",
    "delegable true",
    "delegable false",
    "delegations true",
    "delegations false",
    "authorityTypeIds",
    "authorityLimitValueTypes",
    "limit filter up to Unlimited",
    "limit filter bounded",
    "limit filter only Unlimited",
    "two limit filters",
    "issuerType",
    "ownerUserIds",
    "createdAt range",
    "updatedAt from",
    "updatedAt range",
    "filters combine with AND",
    "tenantId of the caller",
]


@pytest.mark.parametrize("case", FILTER_CASES)
def test_e8_filter_keeps_exactly_the_matching_decisions(
    seeded_http: httpx.Client, seeded_demo: TenantState, case: str
) -> None:
    """Each filter selects exactly the decisions its meaning keeps (a strict, non-empty subset), in the
    default order."""
    params, keep = filter_cases(seeded_demo)[case]
    expected = [record for record in seeded_demo.decisions.values() if keep(record)]
    assert 0 < len(expected) < len(seeded_demo.decisions)
    assert decision_ids(seeded_http, params) == default_order(expected)


def test_every_filter_case_is_tested(seeded_demo: TenantState) -> None:
    """The parametrized list names every case of `filter_cases`."""
    assert sorted(filter_cases(seeded_demo)) == sorted(FILTER_CASES)


# -- projection -------------------------------------------------------------------------------------------


def test_e8_projection_returns_only_the_named_fields(
    seeded_http: httpx.Client, seeded_demo: TenantState
) -> None:
    """``fields`` keeps the named fields (with the record's values) and ``id``, nothing else."""
    names = [
        "NAME",
        "STATUS",
        "PREVIOUS_STATUS",
        "DELEGATIONS_COUNT",
        "DECISION_ID",
        "AUTHORITY_LIMIT_SORT_PRECEDENCE",
    ]
    page = data_of(seeded_http.get(DECISIONS, params={"fields": ",".join(names), "limit": 100}))
    keys = {
        "id",
        "name",
        "status",
        "previousStatus",
        "delegations",
        "decisionId",
        "authorityLimitSortPrecedence",
    }
    assert len(page["data"]) == 100
    for record in page["data"]:
        DecisionProjection.model_validate(record)
        assert record == {key: seeded_demo.decisions[record["id"]][key] for key in keys}


def test_e8_projection_of_every_field_name(seeded_http: httpx.Client, seeded_demo: TenantState) -> None:
    """Every selectable name maps to a field the decision has: all names together give the whole record
    except the fields no name selects."""
    names = [name.value for name in DecisionField]
    record = data_of(seeded_http.get(DECISIONS, params={"fields": ",".join(names), "limit": 1}))["data"][0]
    full = seeded_demo.decisions[record["id"]]
    assert set(record) == {"id"} | {name.json_key for name in DecisionField}
    assert record == {key: full[key] for key in record}


# -- sorting ----------------------------------------------------------------------------------------------

SORT_KEYS: dict[str, Callable[[Record], Any]] = {
    "name": lambda r: r["name"],
    "sectionName": lambda r: r["sectionName"],
    "categoryName": lambda r: r["categoryName"],
    "status": lambda r: r["status"],
    "updatedAt": lambda r: r["updatedAt"],
    "createdAt": lambda r: r["createdAt"],
    "delegationsCount": lambda r: r["delegations"],
    "authorityLimitSortPrecedence": lambda r: r["authorityLimitSortPrecedence"],
    "decisionDisplayId": lambda r: int(r["decisionDisplayId"]),
    "rank": lambda r: 2 * ("re" in r["name"].lower()) + ("re" in r["description"].lower()),
}
"""E8's sort criteria and the value each orders by (``rank``: relevance to the search ``re``, a name match
counting twice a description match)."""


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("sort_by", list(SORT_KEYS))
def test_e8_sorts_by_each_criterion_with_an_id_tie_break(
    seeded_http: httpx.Client, seeded_demo: TenantState, sort_by: str, order: str
) -> None:
    """Every decision, through every page, in the criterion's order; ties broken by id in the same order."""
    params = {"sortBy": sort_by, "sortOrder": order}
    records = list(seeded_demo.decisions.values())
    if sort_by == "rank":
        params["search"] = "re"
        records = [r for r in records if SORT_KEYS["rank"](r) > 0]
    key = SORT_KEYS[sort_by]
    expected = [r["id"] for r in sorted(records, key=lambda r: (key(r), r["id"]), reverse=order == "desc")]
    assert decision_ids(seeded_http, params) == expected
    assert len({key(r) for r in records}) > 1


def test_e8_sort_order_defaults(seeded_http: httpx.Client, seeded_demo: TenantState) -> None:
    """Without a criterion: newest createdAt first. A criterion without an order sorts ascending."""
    records = list(seeded_demo.decisions.values())
    assert decision_ids(seeded_http, {}) == default_order(records)
    by_name = [r["id"] for r in sorted(records, key=lambda r: (r["name"], r["id"]))]
    assert decision_ids(seeded_http, {"sortBy": "name"}) == by_name


def test_e8_pages_carry_full_records_in_the_projected_order(
    seeded_http: httpx.Client, seeded_demo: TenantState
) -> None:
    """Without projection a page holds the stored records themselves, in the same order as with it."""
    params: dict[str, str | int] = {"sortBy": "updatedAt", "sortOrder": "desc", "limit": 100, "page": 3}
    full = data_of(seeded_http.get(DECISIONS, params=params))["data"]
    projected = data_of(seeded_http.get(DECISIONS, params={**params, "fields": "NAME"}))["data"]
    assert [record["id"] for record in full] == [record["id"] for record in projected]
    assert full == [seeded_demo.decisions[record["id"]] for record in full]


# -- paging -----------------------------------------------------------------------------------------------


def page_of(client: httpx.Client, params: dict[str, str | int]) -> dict[str, Any]:
    """One E8 page object."""
    result: dict[str, Any] = data_of(client.get(DECISIONS, params=params))
    return result


def test_e8_paging_defaults(seeded_http: httpx.Client, seeded_demo: TenantState) -> None:
    """No page or limit: page 1 of 10, total counts every decision."""
    page = page_of(seeded_http, {})
    assert (page["page"], page["limit"], page["total"]) == (1, 10, len(seeded_demo.decisions))
    assert [r["id"] for r in page["data"]] == default_order(list(seeded_demo.decisions.values()))[:10]


@pytest.mark.parametrize("limit", [1, 100])
def test_e8_limit_bounds_are_accepted(seeded_http: httpx.Client, limit: int) -> None:
    """limit 1 and limit 100 are both valid page sizes."""
    page = page_of(seeded_http, {"limit": limit})
    assert (page["limit"], len(page["data"])) == (limit, limit)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        *(("page", value) for value in ("0", "-1", "abc", "1.5")),
        *(("limit", value) for value in ("0", "101", "-1", "abc")),
    ],
)
def test_e8_refuses_a_page_or_limit_out_of_range(seeded_http: httpx.Client, name: str, value: str) -> None:
    """page must be an integer >= 1 and limit an integer in 1..100."""
    error_of(seeded_http.get(DECISIONS, params={name: value}), 400, name)


E8_INVALID: list[tuple[dict[str, str], str]] = [
    ({"sortBy": "popularity"}, "sortBy"),
    ({"sortOrder": "up"}, "sortOrder"),
    ({"status": "DRAFT,BOGUS"}, "status.1"),
    ({"delegable": "maybe"}, "delegable"),
    ({"createdAtStart": "yesterday"}, "createdAtStart"),
    ({"updatedAtEnd": "2025-13-01T00:00:00Z"}, "updatedAtEnd"),
    ({"tenantId": "acme"}, "tenantId"),
    ({"fields": "NAME,COLOUR"}, "fields.1"),
    ({"authorityLimitValueTypes": "Weeks"}, "authorityLimitValueTypes.0"),
    ({"authorityLimitValueFilters": "Currency>5"}, "authorityLimitValueFilters"),
    (
        {"authorityLimitValueFilters": '[{"minValue": "1"}]'},
        "authorityLimitValueFilters.0.authorityLimitValueType",
    ),
]


@pytest.mark.parametrize(("params", "field"), E8_INVALID, ids=[field for _, field in E8_INVALID])
def test_e8_refuses_an_invalid_query(seeded_http: httpx.Client, params: dict[str, str], field: str) -> None:
    """Enums, booleans, timestamps, uuids, projection names and the JSON filter list are checked."""
    error_of(seeded_http.get(DECISIONS, params=params), 400, field)


def test_e8_empty_result(seeded_http: httpx.Client) -> None:
    """A query that matches nothing: total 0 and an empty page, on page 1 and beyond."""
    for number in (1, 2):
        page = page_of(seeded_http, {"decisionIds": UNKNOWN, "page": number})
        assert (page["page"], page["total"], page["data"]) == (number, 0, [])


@pytest.mark.parametrize("limit", [25, 30], ids=["exact multiple of limit", "partial last page"])
def test_e8_pages_split_the_result_without_gaps_or_repeats(
    seeded_http: httpx.Client, seeded_demo: TenantState, limit: int
) -> None:
    """The archived decisions page by page: full pages, then the remainder, then an empty page; together
    they are the whole ordered result exactly once."""
    expected = default_order([r for r in seeded_demo.decisions.values() if r["status"] == "ARCHIVED"])
    pages = math.ceil(len(expected) / limit)
    seen: list[str] = []
    for number in range(1, pages + 2):
        page = page_of(seeded_http, {"status": "ARCHIVED", "page": number, "limit": limit})
        assert (page["page"], page["limit"], page["total"]) == (number, limit, len(expected))
        assert len(page["data"]) == len(expected[(number - 1) * limit : number * limit])
        seen += [record["id"] for record in page["data"]]
    assert seen == expected
    assert (len(expected) % limit == 0) == (limit == 25)


def test_e8_page_past_the_end(seeded_http: httpx.Client, seeded_demo: TenantState) -> None:
    """A page beyond the last: empty data, the same total, the requested page number."""
    page = page_of(seeded_http, {"page": 1000, "limit": 100})
    assert (page["page"], page["total"], page["data"]) == (1000, len(seeded_demo.decisions), [])


def test_e8_list_parameters_may_be_comma_separated_or_repeated(
    seeded_http: httpx.Client, seeded_demo: TenantState
) -> None:
    """``status=A,B``, ``status=A&status=B`` and a mix of both select the same decisions."""
    sections = sorted({r["sectionId"] for r in seeded_demo.decisions.values()})[:3]
    comma = decision_ids(seeded_http, {"status": "DRAFT,ARCHIVED", "sectionIds": ",".join(sections)})
    repeated = decision_ids(
        seeded_http, [("status", "DRAFT"), ("status", "ARCHIVED"), *(("sectionIds", s) for s in sections)]
    )
    mixed = decision_ids(
        seeded_http,
        [("status", "DRAFT,ARCHIVED"), ("sectionIds", sections[0]), ("sectionIds", ",".join(sections[1:]))],
    )
    assert comma == repeated == mixed
    assert comma


def test_e8_ignores_unknown_query_parameters(seeded_http: httpx.Client) -> None:
    """An unknown parameter changes nothing."""
    plain = decision_ids(seeded_http, {"status": "ARCHIVED"})
    assert decision_ids(seeded_http, {"status": "ARCHIVED", "colour": "blue", "statuses": "DRAFT"}) == plain


# -- E11, E12 revision ids --------------------------------------------------------------------------------

REVISIONS = {
    "E11": ("/decision/v1/delegations/{}/changelog/revision-ids", "delegation_revisions"),
    "E12": ("/document/v1/documents/{}/changelog/revision-ids", "document_revisions"),
}


@pytest.mark.parametrize("endpoint", list(REVISIONS))
def test_revision_ids_are_a_bare_array_ascending_by_default(
    seeded_http: httpx.Client, seeded_demo: TenantState, endpoint: str
) -> None:
    """A bare JSON array of the record's revision ids: ascending by default and with asc; desc reverses."""
    path, store = REVISIONS[endpoint]
    revisions: dict[str, list[str]] = getattr(seeded_demo, store)
    record_id = next(key for key, values in revisions.items() if len(values) >= 3)
    ascending = sorted(revisions[record_id], key=int)
    url = path.format(record_id)
    for params, expected in (
        ({}, ascending),
        ({"sortOrder": "asc"}, ascending),
        ({"sortOrder": "desc"}, ascending[::-1]),
    ):
        response = seeded_http.get(url, params=params)
        assert response.status_code == 200
        assert response.json() == expected
    error_of(seeded_http.get(url, params={"sortOrder": "newest"}), 400, "sortOrder")


# -- the four list extensions -----------------------------------------------------------------------------

LISTS = {
    "users": ("/auth/v1/user", "users", False),
    "groups": ("/settings/v1/groups", "groups", True),
    "positions": ("/settings/v1/positions", "positions", True),
    "delegations": ("/decision/v1/delegations", "delegations", False),
}
"""List extension: path, the tenant collection it lists, whether tenantId is required."""


@pytest.mark.parametrize("name", list(LISTS))
def test_list_extension_pages_through_every_record_once(
    seeded_http: httpx.Client, seeded_demo: TenantState, name: str
) -> None:
    """Pages of 7: full pages, a partial last page, then an empty page past the end; each record once."""
    path, collection, _ = LISTS[name]
    records: dict[str, Any] = getattr(seeded_demo, collection)
    base = {"tenantId": DEMO_TENANT_ID}
    total, limit = len(records), 7
    assert total % limit
    seen: list[str] = []
    for number in range(1, total // limit + 3):
        page = data_of(seeded_http.get(path, params={**base, "page": number, "limit": limit}))
        assert (page["page"], page["limit"], page["total"]) == (number, limit, total)
        assert len(page["data"]) == len(list(records)[(number - 1) * limit : number * limit])
        seen += [record["id"] for record in page["data"]]
    assert sorted(seen) == sorted(records)
    default = data_of(seeded_http.get(path, params=base))
    assert (default["page"], default["limit"], len(default["data"])) == (1, 10, 10)
    error_of(seeded_http.get(path, params={**base, "limit": 101}), 400, "limit")
    error_of(seeded_http.get(path, params={**base, "page": 0}), 400, "page")


@pytest.mark.parametrize("path", [DECISIONS, *(path for path, _, _ in LISTS.values())])
def test_a_page_number_beyond_64_bits_is_a_page_past_the_end(seeded_http: httpx.Client, path: str) -> None:
    """A page number too big for 64 bits is an empty page like any page past the end, not a 5xx."""
    page = data_of(seeded_http.get(path, params={"tenantId": DEMO_TENANT_ID, "page": str(2**64)}))
    assert (page["page"], page["data"]) == (2**64, [])


@pytest.mark.parametrize("name", [name for name, (_, _, required) in LISTS.items() if required])
def test_list_extension_requires_the_tenant(seeded_http: httpx.Client, name: str) -> None:
    """The group and position lists need ``tenantId``."""
    error_of(seeded_http.get(LISTS[name][0]), 400, "tenantId")


def list_filter_cases(demo: TenantState) -> dict[str, tuple[str, dict[str, str], list[str]]]:
    """Filters of the list extensions the sync relies on, by case: path, query, expected ids in order."""
    delegations = list(demo.delegations.values())
    decisions = {d["decisionId"] for d in delegations[:40]}
    since = sorted(d["updatedAt"] for d in delegations)[300]
    users = list(demo.users.values())
    user_since = sorted(u["updatedOn"] for u in users)[250]
    return {
        "delegations by status and decision": (
            "/decision/v1/delegations",
            {"status": "ISSUED,SUSPENDED", "decisionIds": ",".join(decisions)},
            [
                d["id"]
                for d in sorted(delegations, key=lambda d: (d["createdAt"], d["id"]))
                if d["status"] in ("ISSUED", "SUSPENDED") and d["decisionId"] in decisions
            ],
        ),
        "delegations updated since, newest first": (
            "/decision/v1/delegations",
            {"updatedAtStart": since, "sortBy": "updatedAt", "sortOrder": "desc"},
            [
                d["id"]
                for d in sorted(delegations, key=lambda d: (d["updatedAt"], d["id"]), reverse=True)
                if d["updatedAt"] >= since
            ],
        ),
        "users updated since": (
            "/auth/v1/user",
            {"updatedAtStart": user_since, "sortBy": "updatedOn"},
            [
                u["id"]
                for u in sorted(users, key=lambda u: (u["updatedOn"], u["id"]))
                if u["updatedOn"] >= user_since
            ],
        ),
        "groups by search, by name": (
            "/settings/v1/groups",
            {"tenantId": DEMO_TENANT_ID, "status": "ACTIVE", "search": "FINANCE", "sortBy": "groupName"},
            [
                g["id"]
                for g in sorted(demo.groups.values(), key=lambda g: (g["groupName"], g["id"]))
                if "finance" in f"{g['groupName']} {g['displayName']}".lower()
            ],
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "delegations by status and decision",
        "delegations updated since, newest first",
        "users updated since",
        "groups by search, by name",
    ],
)
def test_list_extension_filters(seeded_http: httpx.Client, seeded_demo: TenantState, case: str) -> None:
    """The extension filters the sync uses select exactly the expected records, in order."""
    path, params, expected = list_filter_cases(seeded_demo)[case]
    assert expected
    assert [record["id"] for record in fetch_all(seeded_http, path, params)] == expected


def test_e8_answers_a_timestamp_out_of_range_with_400_not_500(seeded_http: httpx.Client) -> None:
    response = seeded_http.get("/decision/v1/decisions", params={"updatedAtEnd": "0001-01-01T00:00:00+00:01"})
    assert response.status_code == 400, response.text
