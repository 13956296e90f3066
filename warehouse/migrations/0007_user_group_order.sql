-- Which of a user's groups is the primary one. The User record lists userGroups without a primary flag;
-- E1's isPrimaryOrg orders the list, the primary organisation first (the assumption the emulator follows,
-- and what a user's primaryOrganization shows), so the order is kept and the first is the primary.
ALTER TABLE user_groups ADD COLUMN group_order INTEGER;
ALTER TABLE user_groups ADD COLUMN is_primary BOOLEAN;
