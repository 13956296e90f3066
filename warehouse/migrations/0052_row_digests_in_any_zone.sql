-- A row's digest (row_digest, migration 0049) no longer depends on the time zone of the process that
-- computes it. Each instant (a TIMESTAMP WITH TIME ZONE column) entered the digest as DuckDB writes it as
-- text, which is in the session's time zone, the process's own (TZ, the system's zone). A run in another
-- zone than the last one (an operator's laptop beside the nightly server, a container without TZ) found
-- every stored row with an instant unequal to the same row read again: it wrote every such record again,
-- and counted every such item row (group_parents) as updated, though nothing had changed. An instant now
-- enters as its microseconds since the epoch (epoch_us), the same in every zone
-- (warehouse.schema.row_digest; tests/test_row_digest.py).
--
-- The rows of the five tables that have instants are digested again here, by that expression over each
-- table's staged columns as they are now; the other tables' digests do not change. At 100,000 decisions
-- this costs about as much as digesting them at their first commit (a few seconds), once.

UPDATE decisions SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "decision_display_id" := "decision_display_id",
    "name" := "name", "description" := "description", "guidance" := "guidance", "section_id" := "section_id",
    "section_name" := "section_name", "category_id" := "category_id", "category_name" := "category_name",
    "status" := "status", "previous_status" := "previous_status", "owner_id" := "owner_id",
    "owner_username" := "owner_username", "created_by" := "created_by",
    "created_by_username" := "created_by_username", "updated_by" := "updated_by",
    "updated_by_username" := "updated_by_username", "created_at" := epoch_us("created_at"),
    "updated_at" := epoch_us("updated_at"), "copied_from" := "copied_from",
    "condition_enabled" := "condition_enabled", "role_enabled" := "role_enabled", "delegable" := "delegable",
    "delegations_count" := "delegations_count",
    "authority_limit_sort_precedence" := "authority_limit_sort_precedence",
    "delegation_pathway" := "delegation_pathway", "link" := "link", "content_hash" := "content_hash",
    "raw" := md5("raw"), "is_deleted" := "is_deleted"
) AS VARCHAR));

UPDATE delegations SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "delegation_display_id" := "delegation_display_id",
    "decision_id" := "decision_id", "decision_name" := "decision_name", "status" := "status",
    "issuer_type" := "issuer_type", "issuer_id" := "issuer_id", "recipient_id" := "recipient_id",
    "recipient_name" := "recipient_name", "starts_at" := epoch_us("starts_at"),
    "ends_at" := epoch_us("ends_at"), "created_at" := epoch_us("created_at"),
    "updated_at" := epoch_us("updated_at"), "content_hash" := "content_hash", "raw" := md5("raw"),
    "is_deleted" := "is_deleted", "start_date" := "start_date", "end_date" := "end_date"
) AS VARCHAR));

UPDATE groups SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "group_display_id" := "group_display_id",
    "group_name" := "group_name", "display_name" := "display_name", "legal_name" := "legal_name",
    "status" := "status", "is_deleted" := "is_deleted", "group_type_id" := "group_type_id",
    "group_type_name" := "group_type_name", "base_currency" := "base_currency",
    "external_id" := "external_id", "address_street1" := "address_street1",
    "address_street2" := "address_street2", "address_city" := "address_city",
    "address_state" := "address_state", "address_state_code" := "address_state_code",
    "address_zip_code" := "address_zip_code", "address_country" := "address_country",
    "address_country_code" := "address_country_code", "decisions_count" := "decisions_count",
    "delegations_count" := "delegations_count", "created_on" := epoch_us("created_on"),
    "updated_on" := epoch_us("updated_on"), "content_hash" := "content_hash", "raw" := md5("raw")
) AS VARCHAR));

UPDATE group_parents SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "group_id" := "group_id", "item_order" := "item_order",
    "parent_id" := "parent_id", "created_at" := epoch_us("created_at")
) AS VARCHAR));

UPDATE users SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "user_display_id" := "user_display_id", "email" := "email",
    "name" := "name", "display_name" := "display_name", "first_name" := "first_name",
    "last_name" := "last_name", "status" := "status", "employee_id" := "employee_id",
    "employee_number" := "employee_number", "employee_type" := "employee_type",
    "employment_type" := "employment_type", "account_type" := "account_type", "user_type" := "user_type",
    "external_id" := "external_id", "mobile_phone" := "mobile_phone", "manager_id" := "manager_id",
    "start_date" := "start_date", "termination_date" := "termination_date", "is_deleted" := "is_deleted",
    "created_on" := epoch_us("created_on"), "updated_on" := epoch_us("updated_on"),
    "content_hash" := "content_hash", "raw" := md5("raw")
) AS VARCHAR));
