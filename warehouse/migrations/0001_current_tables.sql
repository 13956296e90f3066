-- Current state: one row per record, keyed by tenant_id + id. raw keeps the record's JSON as the service
-- sent it (unknown fields included); content_hash detects real changes for history. Revision lists carry
-- first_seen_at, the commit time of the run that first saw a revision id: the service gives ids, not dates.

CREATE TABLE decisions (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    decision_display_id VARCHAR,
    name VARCHAR,
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
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    copied_from VARCHAR,
    condition_enabled BOOLEAN,
    role_enabled BOOLEAN,
    delegable BOOLEAN,
    delegations_count INTEGER,
    authority_limit_sort_precedence DOUBLE,
    delegation_pathway VARCHAR[],
    link VARCHAR,
    content_hash VARCHAR NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE decision_groups (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    decision_id VARCHAR NOT NULL,
    group_id VARCHAR,
    tenant_group_type_id VARCHAR,
    group_name VARCHAR,
    display_name VARCHAR,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE decision_authorities (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    decision_id VARCHAR NOT NULL,
    authority_type_id VARCHAR,
    authority_type VARCHAR,
    authority_type_order INTEGER,
    authority_limit VARCHAR,
    value_type VARCHAR,
    operator VARCHAR,
    limit_value VARCHAR,
    limit_number DOUBLE,
    limit_unit VARCHAR,
    is_unlimited BOOLEAN NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE decision_documents (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    decision_id VARCHAR NOT NULL,
    document_id VARCHAR NOT NULL,
    document_display_id VARCHAR,
    document_name VARCHAR,
    document_type_name VARCHAR,
    document_status VARCHAR,
    document_file_type VARCHAR,
    document_url VARCHAR,
    is_pinned BOOLEAN,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE delegations (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    delegation_display_id VARCHAR,
    decision_id VARCHAR,
    decision_name VARCHAR,
    status VARCHAR,
    issuer_type VARCHAR,
    issuer_id VARCHAR,
    recipient_id VARCHAR,
    recipient_name VARCHAR,
    start_date TIMESTAMPTZ,
    end_date TIMESTAMPTZ,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    content_hash VARCHAR NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE delegation_revisions (
    tenant_id VARCHAR NOT NULL,
    delegation_id VARCHAR NOT NULL,
    revision_id VARCHAR NOT NULL,
    revision_order INTEGER NOT NULL,
    first_seen_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, delegation_id, revision_id)
);

CREATE TABLE document_revisions (
    tenant_id VARCHAR NOT NULL,
    document_id VARCHAR NOT NULL,
    revision_id VARCHAR NOT NULL,
    revision_order INTEGER NOT NULL,
    first_seen_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant_id, document_id, revision_id)
);

CREATE TABLE users (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    user_display_id VARCHAR,
    email VARCHAR,
    name VARCHAR,
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
    start_date TIMESTAMPTZ,
    termination_date TIMESTAMPTZ,
    is_deleted BOOLEAN,
    created_on TIMESTAMPTZ,
    updated_on TIMESTAMPTZ,
    content_hash VARCHAR NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE user_roles (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    tenant_role_id VARCHAR,
    role_name VARCHAR,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE user_positions (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    position_id VARCHAR,
    position_name VARCHAR,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE user_groups (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR NOT NULL,
    group_id VARCHAR,
    group_name VARCHAR,
    group_type_name VARCHAR,
    display_name VARCHAR,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE groups (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
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
    created_on TIMESTAMPTZ,
    updated_on TIMESTAMPTZ,
    content_hash VARCHAR NOT NULL,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE group_parents (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    group_id VARCHAR NOT NULL,
    parent_id VARCHAR NOT NULL,
    created_at TIMESTAMPTZ,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE positions (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    position_name VARCHAR,
    status VARCHAR,
    is_scim_provisioned BOOLEAN,
    group_ids VARCHAR[],
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE current_user_positions (
    tenant_id VARCHAR NOT NULL,
    id VARCHAR NOT NULL,
    user_id VARCHAR,
    position_id VARCHAR,
    position_name VARCHAR,
    raw JSON NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
