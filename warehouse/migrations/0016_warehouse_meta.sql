-- Facts about the warehouse itself, one row per key. content_hash_scheme: which definition of the content
-- hash (warehouse/rows.py, CONTENT_HASH_SCHEME) the stored hashes follow. Absent until the stored hashes
-- have been computed again from raw the current way (`authority-sync warehouse upgrade`, or the first
-- commit after this migration): a hash that changed only because its definition did must not look like a
-- change of every record, which would add a version of each to history.
CREATE TABLE warehouse_meta (
    key VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
