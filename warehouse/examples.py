"""Example analyst queries, one per view and a few as-of macros: shown by ``make demo`` and in the analyst
guide, tested to run (each returns rows once a tenant was synced twice with a change in between)."""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "How fresh the copy is (v_sync_status)": """
        SELECT tenant_label, last_commit_at, last_full_refresh_at, last_run_status, api_calls_this_month
        FROM v_sync_status ORDER BY tenant_label""",
    # Amounts in different currencies are not comparable: each currency is ranked on its own.
    "Highest currency limits, per currency (v_authority_limits)": """
        SELECT limit_unit AS currency, decision_name, authority_type, limit_number
        FROM v_authority_limits
        WHERE value_type = 'Currency' AND NOT is_unlimited
        QUALIFY row_number() OVER (PARTITION BY limit_unit ORDER BY limit_number DESC, decision_name) <= 2
        ORDER BY currency, limit_number DESC, decision_name""",
    "Deepest management chains (v_org_chart)": """
        SELECT name, levels_below_top, array_to_string(management_chain, ' > ') AS chain
        FROM v_org_chart WHERE chain_end = 'top'
        ORDER BY levels_below_top DESC, name LIMIT 5""",
    "Group tree, display ids beside the names (v_group_tree)": """
        SELECT depth, path, group_display_id, group_type_name FROM v_group_tree ORDER BY path LIMIT 8""",
    "Most revised delegations (v_delegation_activity)": """
        SELECT delegation_display_id, decision_name, status, revisions
        FROM v_delegation_activity ORDER BY revisions DESC, delegation_display_id LIMIT 5""",
    "Delegation activity per day (v_delegation_activity_daily)": """
        SELECT day, revisions_seen, delegations_created
        FROM v_delegation_activity_daily ORDER BY day DESC LIMIT 5""",
    "Users with positions, groups and roles (v_user_profile)": """
        SELECT name, manager_name, positions, groups, roles FROM v_user_profile ORDER BY name LIMIT 5""",
    "Who holds the largest currency limits, per currency (v_user_authorities)": """
        SELECT limit_unit AS currency, user_name, decision_name, limit_number, delegation_display_id
        FROM v_user_authorities
        WHERE value_type = 'Currency' AND NOT is_unlimited AND user_can_act
        QUALIFY row_number() OVER (PARTITION BY limit_unit ORDER BY limit_number DESC, user_name) <= 2
        ORDER BY currency, limit_number DESC, user_name""",
    "Where decisions apply, directly or through an ancestor group (v_decision_scope)": """
        SELECT through_ancestor, count(DISTINCT decision_id) AS decisions, count(DISTINCT group_id) AS groups
        FROM v_decision_scope GROUP BY ALL ORDER BY ALL""",
    # An instant every copy holds: its first commit.
    "Memberships at the first commit (user_groups_as_of)": """
        SELECT u.name, list(g.group_id ORDER BY g.group_order) AS group_ids
        FROM user_groups_as_of((SELECT min(finished_at) FROM sync_runs)) g
        JOIN users_as_of((SELECT min(finished_at) FROM sync_runs)) u
            ON u.tenant_id = g.tenant_id AND u.id = g.user_id
        GROUP BY ALL ORDER BY u.name LIMIT 5""",
    "Latest changes (v_changes)": """
        SELECT changed_at, entity, id, item, field, before, after
        FROM v_changes ORDER BY changed_at DESC, entity, id, field LIMIT 8""",
}
