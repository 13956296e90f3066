-- From this release, each instant enters a row's digest as microseconds since the epoch
-- (warehouse.schema.row_digest), and warehouse_meta.row_digest_scheme records the scheme the stored digests
-- follow (warehouse.digest_scheme): a commit or an upgrade whose process has another scheme digests the
-- stored rows again first. An earlier release digests instants as text in its process's time zone and
-- knows no scheme: if it wrote this warehouse, it would leave digests that this release takes for its own,
-- and every other run would write the tenant's rows again and count its items as updated. This migration
-- makes such a release refuse the warehouse (it knows no migration 52, and says so), and leaves the scheme
-- unknown, so that the upgrade (or the next commit) digests every stored row again.
DELETE FROM warehouse_meta WHERE key = 'row_digest_scheme';
