"""Example analyst queries, one per view: shown by ``make demo`` and in the README, tested to run."""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "Highest currency limits (v_authority_limits)": """
        SELECT decision_name, authority_type, limit_number, limit_unit
        FROM v_authority_limits
        WHERE value_type = 'Currency' AND NOT is_unlimited
        ORDER BY limit_number DESC, decision_name LIMIT 5""",
    "Deepest management chains (v_org_chart)": """
        SELECT name, levels_below_top, array_to_string(management_chain, ' > ') AS chain
        FROM v_org_chart WHERE chain_end = 'top'
        ORDER BY levels_below_top DESC, name LIMIT 5""",
    "Group tree (v_group_tree)": """
        SELECT depth, path, group_type_name FROM v_group_tree ORDER BY path LIMIT 8""",
    "Most revised delegations (v_delegation_activity)": """
        SELECT delegation_display_id, decision_name, status, revisions
        FROM v_delegation_activity ORDER BY revisions DESC, delegation_display_id LIMIT 5""",
    "Delegation activity per day (v_delegation_activity_daily)": """
        SELECT day, revisions_seen, delegations_created
        FROM v_delegation_activity_daily ORDER BY day DESC LIMIT 5""",
    "Users with positions, groups and roles (v_user_profile)": """
        SELECT name, manager_name, positions, groups, roles FROM v_user_profile ORDER BY name LIMIT 5""",
    "Who holds the largest currency limits, through which delegation (v_user_authorities)": """
        SELECT user_name, decision_name, authority_type, limit_number, limit_unit, delegation_display_id
        FROM v_user_authorities
        WHERE value_type = 'Currency' AND NOT is_unlimited
        ORDER BY limit_number DESC, user_name, decision_name LIMIT 5""",
}
