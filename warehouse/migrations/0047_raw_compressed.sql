-- raw (each record's JSON as the service sent it, about 3.4 KB a decision) is compressed with ZSTD
-- instead of DuckDB's choice among dictionary and FSST. Measured on a 20,000-decision tenant's tables
-- (decisions, users and their histories; docs/benchmarks.md, session 27): the file 120 MB -> 43 MB, the
-- first insert and checkpoint 2.4-2.9 s -> 1.3-1.7 s, the checkpoint after a nightly's few appended rows
-- 0.34 s -> 0.17-0.23 s (a checkpoint rewrites the last row group of every table a commit appended to,
-- raw and all, and analysing FSST for it was most of that), and reading raw no slower.
--
-- DuckDB cannot change a column's compression in place: each table with a raw column is built again with
-- the same columns, in the same order, with the same key, and its rows copied. Views and macros name the
-- tables and are bound when used, so they need nothing; the data dictionary's comments are applied again
-- after the migration (warehouse.dictionary), as after any change of the schema. No function appears here
-- (see 0046).

CREATE TABLE current_user_positions__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    user_id VARCHAR,
    position_id VARCHAR,
    position_name VARCHAR,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO current_user_positions__zstd SELECT * FROM current_user_positions;
DROP TABLE current_user_positions;
ALTER TABLE current_user_positions__zstd RENAME TO current_user_positions;

CREATE TABLE current_user_positions_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    user_id VARCHAR,
    position_id VARCHAR,
    position_name VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    ended_run_id VARCHAR,
    is_current BOOLEAN
);
INSERT INTO current_user_positions_history__zstd SELECT * FROM current_user_positions_history;
DROP TABLE current_user_positions_history;
ALTER TABLE current_user_positions_history__zstd RENAME TO current_user_positions_history;

CREATE TABLE decision_authorities__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_id VARCHAR,
    item_order INTEGER,
    authority_type_id VARCHAR,
    authority_type VARCHAR,
    authority_type_order INTEGER,
    authority_limit VARCHAR,
    value_type VARCHAR,
    "operator" VARCHAR,
    limit_value VARCHAR,
    limit_number DECIMAL(38,6),
    limit_unit VARCHAR,
    is_unlimited BOOLEAN NOT NULL,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, decision_id, item_order)
);
INSERT INTO decision_authorities__zstd SELECT * FROM decision_authorities;
DROP TABLE decision_authorities;
ALTER TABLE decision_authorities__zstd RENAME TO decision_authorities;

CREATE TABLE decision_authorities_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_id VARCHAR,
    item_order INTEGER,
    authority_type_id VARCHAR,
    authority_type VARCHAR,
    authority_type_order INTEGER,
    authority_limit VARCHAR,
    value_type VARCHAR,
    "operator" VARCHAR,
    limit_value VARCHAR,
    limit_number DECIMAL(38,6),
    limit_unit VARCHAR,
    is_unlimited BOOLEAN,
    raw JSON USING COMPRESSION ZSTD,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    occurrence INTEGER,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    ended_run_id VARCHAR,
    is_current BOOLEAN
);
INSERT INTO decision_authorities_history__zstd SELECT * FROM decision_authorities_history;
DROP TABLE decision_authorities_history;
ALTER TABLE decision_authorities_history__zstd RENAME TO decision_authorities_history;

CREATE TABLE decision_documents__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_id VARCHAR,
    item_order INTEGER,
    document_id VARCHAR,
    document_display_id VARCHAR,
    document_name VARCHAR,
    document_type_name VARCHAR,
    document_status VARCHAR,
    document_file_type VARCHAR,
    document_url VARCHAR,
    is_pinned BOOLEAN,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, decision_id, item_order)
);
INSERT INTO decision_documents__zstd SELECT * FROM decision_documents;
DROP TABLE decision_documents;
ALTER TABLE decision_documents__zstd RENAME TO decision_documents;

CREATE TABLE decision_documents_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_id VARCHAR,
    item_order INTEGER,
    document_id VARCHAR,
    document_display_id VARCHAR,
    document_name VARCHAR,
    document_type_name VARCHAR,
    document_status VARCHAR,
    document_file_type VARCHAR,
    document_url VARCHAR,
    is_pinned BOOLEAN,
    raw JSON USING COMPRESSION ZSTD,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    occurrence INTEGER,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    ended_run_id VARCHAR,
    is_current BOOLEAN
);
INSERT INTO decision_documents_history__zstd SELECT * FROM decision_documents_history;
DROP TABLE decision_documents_history;
ALTER TABLE decision_documents_history__zstd RENAME TO decision_documents_history;

CREATE TABLE decision_groups__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_id VARCHAR,
    item_order INTEGER,
    group_id VARCHAR,
    tenant_group_type_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, decision_id, item_order)
);
INSERT INTO decision_groups__zstd SELECT * FROM decision_groups;
DROP TABLE decision_groups;
ALTER TABLE decision_groups__zstd RENAME TO decision_groups;

CREATE TABLE decision_groups_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_id VARCHAR,
    item_order INTEGER,
    group_id VARCHAR,
    tenant_group_type_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    occurrence INTEGER,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    ended_run_id VARCHAR,
    is_current BOOLEAN
);
INSERT INTO decision_groups_history__zstd SELECT * FROM decision_groups_history;
DROP TABLE decision_groups_history;
ALTER TABLE decision_groups_history__zstd RENAME TO decision_groups_history;

CREATE TABLE decisions__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_display_id VARCHAR,
    "name" VARCHAR,
    description VARCHAR,
    guidance VARCHAR,
    section_id VARCHAR,
    section_name VARCHAR,
    category_id VARCHAR,
    category_name VARCHAR,
    status VARCHAR,
    previous_status VARCHAR,
    owner_id VARCHAR,
    owner_username VARCHAR,
    created_by VARCHAR,
    created_by_username VARCHAR,
    updated_by VARCHAR,
    updated_by_username VARCHAR,
    created_at TIMESTAMP WITH TIME ZONE,
    updated_at TIMESTAMP WITH TIME ZONE,
    copied_from VARCHAR,
    condition_enabled BOOLEAN,
    role_enabled BOOLEAN,
    delegable BOOLEAN,
    delegations_count INTEGER,
    authority_limit_sort_precedence DOUBLE,
    delegation_pathway VARCHAR[],
    link VARCHAR,
    content_hash VARCHAR NOT NULL,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO decisions__zstd SELECT * FROM decisions;
DROP TABLE decisions;
ALTER TABLE decisions__zstd RENAME TO decisions;

CREATE TABLE decisions_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    decision_display_id VARCHAR,
    "name" VARCHAR,
    description VARCHAR,
    guidance VARCHAR,
    section_id VARCHAR,
    section_name VARCHAR,
    category_id VARCHAR,
    category_name VARCHAR,
    status VARCHAR,
    previous_status VARCHAR,
    owner_id VARCHAR,
    owner_username VARCHAR,
    created_by VARCHAR,
    created_by_username VARCHAR,
    updated_by VARCHAR,
    updated_by_username VARCHAR,
    created_at TIMESTAMP WITH TIME ZONE,
    updated_at TIMESTAMP WITH TIME ZONE,
    copied_from VARCHAR,
    condition_enabled BOOLEAN,
    role_enabled BOOLEAN,
    delegable BOOLEAN,
    delegations_count INTEGER,
    authority_limit_sort_precedence DOUBLE,
    delegation_pathway VARCHAR[],
    link VARCHAR,
    content_hash VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    is_current BOOLEAN,
    ended_run_id VARCHAR
);
INSERT INTO decisions_history__zstd SELECT * FROM decisions_history;
DROP TABLE decisions_history;
ALTER TABLE decisions_history__zstd RENAME TO decisions_history;

CREATE TABLE delegations__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    delegation_display_id VARCHAR,
    decision_id VARCHAR,
    decision_name VARCHAR,
    status VARCHAR,
    issuer_type VARCHAR,
    issuer_id VARCHAR,
    recipient_id VARCHAR,
    recipient_name VARCHAR,
    starts_at TIMESTAMP WITH TIME ZONE,
    ends_at TIMESTAMP WITH TIME ZONE,
    created_at TIMESTAMP WITH TIME ZONE,
    updated_at TIMESTAMP WITH TIME ZONE,
    content_hash VARCHAR NOT NULL,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    start_date DATE,
    end_date DATE,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO delegations__zstd SELECT * FROM delegations;
DROP TABLE delegations;
ALTER TABLE delegations__zstd RENAME TO delegations;

CREATE TABLE delegations_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    delegation_display_id VARCHAR,
    decision_id VARCHAR,
    decision_name VARCHAR,
    status VARCHAR,
    issuer_type VARCHAR,
    issuer_id VARCHAR,
    recipient_id VARCHAR,
    recipient_name VARCHAR,
    starts_at TIMESTAMP WITH TIME ZONE,
    ends_at TIMESTAMP WITH TIME ZONE,
    created_at TIMESTAMP WITH TIME ZONE,
    updated_at TIMESTAMP WITH TIME ZONE,
    content_hash VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    is_current BOOLEAN,
    start_date DATE,
    end_date DATE,
    ended_run_id VARCHAR
);
INSERT INTO delegations_history__zstd SELECT * FROM delegations_history;
DROP TABLE delegations_history;
ALTER TABLE delegations_history__zstd RENAME TO delegations_history;

CREATE TABLE group_directory__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    group_display_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    group_type_name VARCHAR,
    status VARCHAR,
    is_deleted BOOLEAN,
    content_hash VARCHAR,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO group_directory__zstd SELECT * FROM group_directory;
DROP TABLE group_directory;
ALTER TABLE group_directory__zstd RENAME TO group_directory;

CREATE TABLE group_directory_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    group_display_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    group_type_name VARCHAR,
    status VARCHAR,
    is_deleted BOOLEAN,
    content_hash VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    ended_run_id VARCHAR,
    is_current BOOLEAN
);
INSERT INTO group_directory_history__zstd SELECT * FROM group_directory_history;
DROP TABLE group_directory_history;
ALTER TABLE group_directory_history__zstd RENAME TO group_directory_history;

CREATE TABLE groups__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    group_display_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    legal_name VARCHAR,
    status VARCHAR,
    is_deleted BOOLEAN,
    group_type_id VARCHAR,
    group_type_name VARCHAR,
    base_currency VARCHAR,
    external_id VARCHAR,
    address_street1 VARCHAR,
    address_street2 VARCHAR,
    address_city VARCHAR,
    address_state VARCHAR,
    address_state_code VARCHAR,
    address_zip_code VARCHAR,
    address_country VARCHAR,
    address_country_code VARCHAR,
    decisions_count INTEGER,
    delegations_count INTEGER,
    created_on TIMESTAMP WITH TIME ZONE,
    updated_on TIMESTAMP WITH TIME ZONE,
    content_hash VARCHAR NOT NULL,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO groups__zstd SELECT * FROM "groups";
DROP TABLE "groups";
ALTER TABLE groups__zstd RENAME TO "groups";

CREATE TABLE groups_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    group_display_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    legal_name VARCHAR,
    status VARCHAR,
    is_deleted BOOLEAN,
    group_type_id VARCHAR,
    group_type_name VARCHAR,
    base_currency VARCHAR,
    external_id VARCHAR,
    address_street1 VARCHAR,
    address_street2 VARCHAR,
    address_city VARCHAR,
    address_state VARCHAR,
    address_state_code VARCHAR,
    address_zip_code VARCHAR,
    address_country VARCHAR,
    address_country_code VARCHAR,
    decisions_count INTEGER,
    delegations_count INTEGER,
    created_on TIMESTAMP WITH TIME ZONE,
    updated_on TIMESTAMP WITH TIME ZONE,
    content_hash VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    is_current BOOLEAN,
    ended_run_id VARCHAR
);
INSERT INTO groups_history__zstd SELECT * FROM groups_history;
DROP TABLE groups_history;
ALTER TABLE groups_history__zstd RENAME TO groups_history;

CREATE TABLE positions__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    position_name VARCHAR,
    status VARCHAR,
    is_scim_provisioned BOOLEAN,
    group_ids VARCHAR[],
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO positions__zstd SELECT * FROM positions;
DROP TABLE positions;
ALTER TABLE positions__zstd RENAME TO positions;

CREATE TABLE positions_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    position_name VARCHAR,
    status VARCHAR,
    is_scim_provisioned BOOLEAN,
    group_ids VARCHAR[],
    raw JSON USING COMPRESSION ZSTD,
    is_deleted BOOLEAN,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    ended_run_id VARCHAR,
    is_current BOOLEAN
);
INSERT INTO positions_history__zstd SELECT * FROM positions_history;
DROP TABLE positions_history;
ALTER TABLE positions_history__zstd RENAME TO positions_history;

CREATE TABLE users__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    user_display_id VARCHAR,
    email VARCHAR,
    "name" VARCHAR,
    display_name VARCHAR,
    first_name VARCHAR,
    last_name VARCHAR,
    status VARCHAR,
    employee_id VARCHAR,
    employee_number VARCHAR,
    employee_type VARCHAR,
    employment_type VARCHAR,
    account_type VARCHAR,
    user_type VARCHAR,
    external_id VARCHAR,
    mobile_phone VARCHAR,
    manager_id VARCHAR,
    start_date DATE,
    termination_date DATE,
    is_deleted BOOLEAN,
    created_on TIMESTAMP WITH TIME ZONE,
    updated_on TIMESTAMP WITH TIME ZONE,
    content_hash VARCHAR NOT NULL,
    raw JSON USING COMPRESSION ZSTD NOT NULL,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    PRIMARY KEY(tenant_id, id)
);
INSERT INTO users__zstd SELECT * FROM users;
DROP TABLE users;
ALTER TABLE users__zstd RENAME TO users;

CREATE TABLE users_history__zstd (
    tenant_id VARCHAR,
    id VARCHAR,
    user_display_id VARCHAR,
    email VARCHAR,
    "name" VARCHAR,
    display_name VARCHAR,
    first_name VARCHAR,
    last_name VARCHAR,
    status VARCHAR,
    employee_id VARCHAR,
    employee_number VARCHAR,
    employee_type VARCHAR,
    employment_type VARCHAR,
    account_type VARCHAR,
    user_type VARCHAR,
    external_id VARCHAR,
    mobile_phone VARCHAR,
    manager_id VARCHAR,
    start_date DATE,
    termination_date DATE,
    is_deleted BOOLEAN,
    created_on TIMESTAMP WITH TIME ZONE,
    updated_on TIMESTAMP WITH TIME ZONE,
    content_hash VARCHAR,
    raw JSON USING COMPRESSION ZSTD,
    deleted_at TIMESTAMP WITH TIME ZONE,
    synced_at TIMESTAMP WITH TIME ZONE,
    run_id VARCHAR,
    valid_from TIMESTAMP WITH TIME ZONE,
    valid_to TIMESTAMP WITH TIME ZONE,
    is_current BOOLEAN,
    ended_run_id VARCHAR
);
INSERT INTO users_history__zstd SELECT * FROM users_history;
DROP TABLE users_history;
ALTER TABLE users_history__zstd RENAME TO users_history;
