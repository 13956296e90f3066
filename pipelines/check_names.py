"""The checks of a tenant sync by name: what each blocking check asserts, and the names an operator may
turn into warnings (``ADM_WARN_ONLY_CHECKS``, the run tag ``adm/warn_only_checks``).

Names and words only: the settings validate those names without loading what judges a staged extract
(`pipelines.checks`: pyarrow and the extract)."""

from __future__ import annotations

ROW_COUNT_CHECK = "row_count_matches_service_total"
IDS_UNIQUE_CHECK = "ids_unique"
REJECTED_CHECK = "rejected_within_threshold"
MANAGERS_CHECK = "manager_ids_resolve"
DOCUMENTS_CHECK = "documents_have_revisions"
CONFORMITY_CHECK = "records_conform_to_spec"
LIMITS_CHECK = "limit_values_parse"

LIST_CHECKS: dict[str, str] = {
    ROW_COUNT_CHECK: (
        "Records staged equal the total the service reported (a warning when read to the list's end)."
    ),
    IDS_UNIQUE_CHECK: "No id is staged twice.",
    REJECTED_CHECK: (
        "Records the schema contract rejected stay within ADM_REJECT_MAX_COUNT and ADM_REJECT_MAX_SHARE."
    ),
}
"""The blocking checks of every list, in the order they run, and what each asserts."""

TENANT_CHECKS: dict[str, tuple[str, str]] = {
    MANAGERS_CHECK: ("users", "Every manager id is a known user (a warning)."),
    DOCUMENTS_CHECK: (
        "document_revisions",
        "Every document of a staged decision has its revision list checked (a warning).",
    ),
}
"""The blocking checks run once a tenant after the lists': the table each judges, and what it asserts."""

BLOCKING_CHECK_NAMES = frozenset(LIST_CHECKS) | frozenset(TENANT_CHECKS)
"""The names ``ADM_WARN_ONLY_CHECKS`` and the run tag ``adm/warn_only_checks`` accept."""


def parse_check_names(text: str) -> frozenset[str]:
    """Comma-separated names of blocking checks; raises ValueError naming any that is not one."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(names - BLOCKING_CHECK_NAMES)
    if unknown:
        known = ", ".join(sorted(BLOCKING_CHECK_NAMES))
        raise ValueError(f"not a blocking check: {', '.join(unknown)} (the blocking checks: {known})")
    return names
