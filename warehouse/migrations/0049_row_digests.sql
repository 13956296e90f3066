-- Each row of a current table a record feeds keeps the digest of its staged columns (row_digest: MD5 of
-- the row as DuckDB writes it as text, the columns in their staged order, raw as its own MD5), written by
-- the merge with the row. The merge compares a staged row with its current row by digest; it used to
-- digest the current row at every comparison, which read and decompressed raw for every row of the table
-- even when a nightly run staged a few records (a comparison of 200 staged decisions against 20,000 took 96 ms, 10 ms against
-- stored digests; docs/benchmarks.md, session 29).
--
-- Rows written before this migration are digested here, by the expression the merge uses
-- (warehouse.schema.row_digest) over each table's staged columns as they are now. A later change of the
-- staged columns leaves older digests unequal to the staged ones, so those rows are written again once:
-- a stale digest can cost a rewrite, never hide a change. md5 is in DuckDB's core: a write-ahead log
-- replayed offline can run it (see 0046).

ALTER TABLE decisions ADD COLUMN row_digest VARCHAR;
UPDATE decisions SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "decision_display_id" := "decision_display_id",
    "name" := "name", "description" := "description", "guidance" := "guidance",
    "section_id" := "section_id", "section_name" := "section_name", "category_id" := "category_id",
    "category_name" := "category_name", "status" := "status", "previous_status" := "previous_status",
    "owner_id" := "owner_id", "owner_username" := "owner_username", "created_by" := "created_by",
    "created_by_username" := "created_by_username", "updated_by" := "updated_by",
    "updated_by_username" := "updated_by_username", "created_at" := "created_at",
    "updated_at" := "updated_at", "copied_from" := "copied_from",
    "condition_enabled" := "condition_enabled", "role_enabled" := "role_enabled",
    "delegable" := "delegable", "delegations_count" := "delegations_count",
    "authority_limit_sort_precedence" := "authority_limit_sort_precedence",
    "delegation_pathway" := "delegation_pathway", "link" := "link", "content_hash" := "content_hash",
    "raw" := md5("raw"), "is_deleted" := "is_deleted"
) AS VARCHAR));

ALTER TABLE decision_groups ADD COLUMN row_digest VARCHAR;
UPDATE decision_groups SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "decision_id" := "decision_id",
    "item_order" := "item_order", "group_id" := "group_id",
    "tenant_group_type_id" := "tenant_group_type_id", "group_name" := "group_name",
    "display_name" := "display_name", "raw" := md5("raw")
) AS VARCHAR));

ALTER TABLE decision_authorities ADD COLUMN row_digest VARCHAR;
UPDATE decision_authorities SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "decision_id" := "decision_id",
    "item_order" := "item_order", "authority_type_id" := "authority_type_id",
    "authority_type" := "authority_type", "authority_type_order" := "authority_type_order",
    "authority_limit" := "authority_limit", "value_type" := "value_type", "operator" := "operator",
    "limit_value" := "limit_value", "limit_number" := "limit_number", "limit_unit" := "limit_unit",
    "is_unlimited" := "is_unlimited", "raw" := md5("raw")
) AS VARCHAR));

ALTER TABLE decision_documents ADD COLUMN row_digest VARCHAR;
UPDATE decision_documents SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "decision_id" := "decision_id",
    "item_order" := "item_order", "document_id" := "document_id",
    "document_display_id" := "document_display_id", "document_name" := "document_name",
    "document_type_name" := "document_type_name", "document_status" := "document_status",
    "document_file_type" := "document_file_type", "document_url" := "document_url",
    "is_pinned" := "is_pinned", "raw" := md5("raw")
) AS VARCHAR));

ALTER TABLE delegations ADD COLUMN row_digest VARCHAR;
UPDATE delegations SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "delegation_display_id" := "delegation_display_id",
    "decision_id" := "decision_id", "decision_name" := "decision_name", "status" := "status",
    "issuer_type" := "issuer_type", "issuer_id" := "issuer_id", "recipient_id" := "recipient_id",
    "recipient_name" := "recipient_name", "starts_at" := "starts_at", "ends_at" := "ends_at",
    "created_at" := "created_at", "updated_at" := "updated_at", "content_hash" := "content_hash",
    "raw" := md5("raw"), "is_deleted" := "is_deleted", "start_date" := "start_date",
    "end_date" := "end_date"
) AS VARCHAR));

ALTER TABLE users ADD COLUMN row_digest VARCHAR;
UPDATE users SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "user_display_id" := "user_display_id",
    "email" := "email", "name" := "name", "display_name" := "display_name",
    "first_name" := "first_name", "last_name" := "last_name", "status" := "status",
    "employee_id" := "employee_id", "employee_number" := "employee_number",
    "employee_type" := "employee_type", "employment_type" := "employment_type",
    "account_type" := "account_type", "user_type" := "user_type", "external_id" := "external_id",
    "mobile_phone" := "mobile_phone", "manager_id" := "manager_id", "start_date" := "start_date",
    "termination_date" := "termination_date", "is_deleted" := "is_deleted",
    "created_on" := "created_on", "updated_on" := "updated_on", "content_hash" := "content_hash",
    "raw" := md5("raw")
) AS VARCHAR));

ALTER TABLE user_roles ADD COLUMN row_digest VARCHAR;
UPDATE user_roles SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "user_id" := "user_id", "item_order" := "item_order",
    "tenant_role_id" := "tenant_role_id", "role_name" := "role_name"
) AS VARCHAR));

ALTER TABLE user_positions ADD COLUMN row_digest VARCHAR;
UPDATE user_positions SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "user_id" := "user_id", "item_order" := "item_order",
    "position_id" := "position_id", "position_name" := "position_name"
) AS VARCHAR));

ALTER TABLE user_groups ADD COLUMN row_digest VARCHAR;
UPDATE user_groups SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "user_id" := "user_id", "group_id" := "group_id",
    "group_name" := "group_name", "group_type_name" := "group_type_name",
    "display_name" := "display_name", "group_order" := "group_order", "is_primary" := "is_primary"
) AS VARCHAR));

ALTER TABLE groups ADD COLUMN row_digest VARCHAR;
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
    "delegations_count" := "delegations_count", "created_on" := "created_on",
    "updated_on" := "updated_on", "content_hash" := "content_hash", "raw" := md5("raw")
) AS VARCHAR));

ALTER TABLE group_parents ADD COLUMN row_digest VARCHAR;
UPDATE group_parents SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "group_id" := "group_id", "item_order" := "item_order",
    "parent_id" := "parent_id", "created_at" := "created_at"
) AS VARCHAR));

ALTER TABLE positions ADD COLUMN row_digest VARCHAR;
UPDATE positions SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "position_name" := "position_name", "status" := "status",
    "is_scim_provisioned" := "is_scim_provisioned", "group_ids" := "group_ids", "raw" := md5("raw"),
    "is_deleted" := "is_deleted"
) AS VARCHAR));

ALTER TABLE group_directory ADD COLUMN row_digest VARCHAR;
UPDATE group_directory SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "group_display_id" := "group_display_id",
    "group_name" := "group_name", "display_name" := "display_name",
    "group_type_name" := "group_type_name", "status" := "status", "is_deleted" := "is_deleted",
    "content_hash" := "content_hash", "raw" := md5("raw")
) AS VARCHAR));

ALTER TABLE current_user_positions ADD COLUMN row_digest VARCHAR;
UPDATE current_user_positions SET row_digest = md5(CAST(struct_pack(
    "tenant_id" := "tenant_id", "id" := "id", "user_id" := "user_id", "position_id" := "position_id",
    "position_name" := "position_name", "raw" := md5("raw"), "is_deleted" := "is_deleted"
) AS VARCHAR));
