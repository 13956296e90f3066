-- limit_number held a DOUBLE: 123456789012345678901234567.891 came out 1.2345678901234568e+26 and a sum
-- of currency limits could be off in its last cents. It is now DECIMAL(38,6): every value of up to 32
-- integer digits and 6 decimals is held exactly; a value that does not fit is NULL, counted by the warning
-- check limit_values_parse, and limit_value keeps its text (issue 28).
--
-- A value stored before this migration came through a DOUBLE: one of 10^15 or more may already be off in
-- its digits, so it is set NULL rather than kept looking exact; the other values are cast (rounded to 6
-- decimals), which gives back the decimal written for any value a DOUBLE holds to 15 digits. No function
-- appears here: a write-ahead log replayed offline knows only the core of DuckDB (test_recovery). A
-- decision's limits are parsed again from limit_value whenever the decision is read again (a full refresh
-- reads all).
ALTER TABLE decision_authorities ALTER COLUMN limit_number SET DATA TYPE DECIMAL(38, 6)
    USING CASE WHEN limit_number > -1e15 AND limit_number < 1e15
        THEN CAST(limit_number AS DECIMAL(38, 6)) END;
ALTER TABLE decision_authorities_history ALTER COLUMN limit_number SET DATA TYPE DECIMAL(38, 6)
    USING CASE WHEN limit_number > -1e15 AND limit_number < 1e15
        THEN CAST(limit_number AS DECIMAL(38, 6)) END;

-- The views over the column are stated again so that they describe it with its new type.
CREATE OR REPLACE VIEW v_authority_limits AS
SELECT
    d.tenant_id, d.id AS decision_id, d.decision_display_id, d.name AS decision_name, d.status,
    d.section_name, d.category_name, d.delegable, a.id AS authority_id, a.authority_type_id,
    a.authority_type, a.authority_type_order, a.value_type, a.operator, a.limit_value, a.limit_number,
    a.limit_unit, a.is_unlimited, a.authority_limit
FROM decisions d
JOIN decision_authorities a ON a.tenant_id = d.tenant_id AND a.decision_id = d.id
WHERE d.is_deleted IS NOT TRUE;
CREATE OR REPLACE VIEW v_user_authorities AS SELECT * FROM user_authorities_as_of(current_timestamp);
