"""Deterministic seeding of a tenant: the same seed and scale always give the same records.

The demo tenant looks like a mid-sized company: an org chart with managers, roles and positions, a group
hierarchy of company, regions, business units and departments with addresses, decisions across sections and
categories with authorities of every limit value type, documents and delegations with changelog revisions,
actions, matrices, reports and notifications.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from emulator import links
from emulator.scale import SEED_EPOCH, Scale
from emulator.state import ParentLink, Record, TenantState, random_uuid

FIRST_NAMES = (
    "Ada",
    "Alan",
    "Amara",
    "Ana",
    "Ben",
    "Carla",
    "Chen",
    "Dara",
    "David",
    "Elena",
    "Emeka",
    "Eva",
    "Farah",
    "Felix",
    "Grace",
    "Hana",
    "Hugo",
    "Ines",
    "Ivan",
    "Jonas",
    "Julia",
    "Kai",
    "Kenji",
    "Lara",
    "Leo",
    "Lina",
    "Malik",
    "Maria",
    "Mateo",
    "Mei",
    "Nadia",
    "Noah",
    "Olga",
    "Omar",
    "Priya",
    "Rafael",
    "Rosa",
    "Sami",
    "Sara",
    "Tariq",
    "Tomas",
    "Uma",
    "Victor",
    "Wen",
    "Yara",
    "Yusuf",
    "Zara",
    "Zoe",
)
LAST_NAMES = (
    "Abbott",
    "Adeyemi",
    "Bauer",
    "Becker",
    "Castillo",
    "Chen",
    "Costa",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Kumar",
    "Larsen",
    "Lopez",
    "Moreau",
    "Nakamura",
    "Novak",
    "Okafor",
    "Olsen",
    "Patel",
    "Petrov",
    "Quinn",
    "Rossi",
    "Santos",
    "Schmidt",
    "Silva",
    "Tanaka",
    "Torres",
    "Usman",
    "Varga",
    "Weber",
    "Wojcik",
    "Xu",
    "Yilmaz",
    "Zhang",
    "Zimmermann",
)
POSITIONS = (
    "Chief Executive Officer",
    "Chief Financial Officer",
    "Chief Operating Officer",
    "General Counsel",
    "VP Finance",
    "VP Procurement",
    "VP People",
    "VP Engineering",
    "Finance Director",
    "Controller",
    "Treasury Manager",
    "Procurement Manager",
    "Buyer",
    "HR Business Partner",
    "HR Manager",
    "Legal Counsel",
    "Engineering Manager",
    "Software Engineer",
    "Analyst",
    "Accountant",
    "Operations Manager",
    "Site Manager",
    "Project Manager",
    "Office Manager",
)
ROLES = ("Administrator", "Authority Editor", "Viewer", "Approver", "Auditor", "Delegation Manager")
GROUP_TYPES = ("Company", "Region", "Business Unit", "Department")
REGIONS = (
    ("Americas", "New York", "New York", "NY", "10001", "United States", "US", "USD"),
    ("EMEA", "Berlin", "Berlin", "BE", "10115", "Germany", "DE", "EUR"),
    ("APAC", "Singapore", "Singapore", "SG", "018956", "Singapore", "SG", "SGD"),
    ("UK & Ireland", "London", "England", "ENG", "EC2A 1NT", "United Kingdom", "GB", "GBP"),
)
BUSINESS_UNITS = ("Retail", "Wholesale", "Manufacturing", "Services", "Digital")
DEPARTMENTS = ("Finance", "Procurement", "People", "Legal", "Engineering", "Operations", "Sales", "Treasury")
SECTIONS = {
    "Finance": ("Capital Expenditure", "Operating Expenditure", "Treasury", "Write-offs"),
    "Procurement": ("Purchase Orders", "Contracts", "Vendor Onboarding"),
    "People": ("Hiring", "Compensation", "Terminations"),
    "Legal": ("Litigation", "Agreements", "Regulatory Filings"),
    "Operations": ("Facilities", "Health and Safety", "Logistics"),
    "Information Technology": ("Software", "Security Exceptions", "Infrastructure"),
}
VERBS = ("Approve", "Authorise", "Sign", "Commit", "Release", "Waive", "Amend", "Terminate", "Renew")
AUTHORITY_TYPES = (
    ("Approve", "check-circle"),
    ("Recommend", "thumbs-up"),
    ("Review", "eye"),
    ("Sign", "pen"),
    ("Be Informed", "bell"),
)
VALUE_TYPES = ("Currency", "Number", "Days", "Months", "Years", "Authorized", "Percentage")
ISSUER_TYPES = ("USER", "POSITION", "GROUP")
DELEGATION_STATUSES = (
    "ISSUED",
    "ISSUED",
    "ISSUED",
    "ACCEPTED",
    "ACCEPTED",
    "PENDING",
    "DRAFT",
    "SUSPENDED",
    "REVOKED",
    "EXPIRED",
)
DECISION_STATUSES = ("PUBLISHED",) * 7 + ("DRAFT", "DRAFT", "ARCHIVED")
DOCUMENT_TYPES = (
    ("Policy", "file-text", "pdf"),
    ("Procedure", "list", "docx"),
    ("Board Minute", "book", "pdf"),
)


class Seeder:
    """Builds one tenant from a seeded random generator."""

    def __init__(self, seed: int, tenant_id: str, scale: Scale, label: str) -> None:
        self.rng = random.Random(f"{seed}:{tenant_id}")
        self.scale = scale
        self.label = label
        self.tenant_id = tenant_id
        self.state = TenantState(tenant_id=tenant_id, current_user_id="")

    def uid(self) -> str:
        """A deterministic version-4 UUID."""
        return random_uuid(self.rng)

    def moment(self, days_back_max: int = 700, days_back_min: int = 1) -> str:
        """A seeded timestamp (milliseconds, UTC) between the given days before the seed epoch."""
        span_ms = (days_back_max - days_back_min) * 86_400_000
        offset = timedelta(days=days_back_min, milliseconds=int(self.rng.random() * span_ms))
        return (SEED_EPOCH - offset).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def build(self) -> TenantState:
        """Seed every kind of record, in dependency order."""
        self.seed_roles_and_positions()
        self.seed_groups()
        self.seed_users()
        self.seed_documents()
        self.seed_decisions()
        self.seed_delegations()
        self.seed_actions()
        self.seed_matrices()
        self.seed_reports()
        self.seed_notifications()
        self.state.next_display_id = 10_000_000
        return self.state

    # -- org ---------------------------------------------------------------------------------------------

    def seed_roles_and_positions(self) -> None:
        """Tenant roles and positions."""
        for name in ROLES:
            role_id = self.uid()
            self.state.roles[role_id] = {"id": role_id, "roleName": name}
        for name in POSITIONS:
            position_id = self.uid()
            self.state.positions[position_id] = {
                "id": position_id,
                "tenantId": self.tenant_id,
                "positionName": name,
                "isScimProvisioned": self.rng.random() < 0.3,
                "status": "ACTIVE",
                "groupIds": [],
                "createdOn": self.moment(900, 700),
                "updatedOn": self.moment(600, 300),
            }

    def seed_groups(self) -> None:
        """A company root, regions, business units and departments, each with an address."""
        for name in GROUP_TYPES:
            type_id = self.uid()
            self.state.group_types[type_id] = {
                "id": type_id,
                "groupTypeName": name,
                "shouldAllowEnableDisable": name != "Company",
                "isDefault": name == "Department",
            }
        types = {record["groupTypeName"]: type_id for type_id, record in self.state.group_types.items()}
        root = self.add_group(f"{self.label} Holdings", types["Company"], REGIONS[0], None)
        tiers: list[str] = []
        for region in REGIONS:
            tiers.append(self.add_group(f"{self.label} {region[0]}", types["Region"], region, root))
        while len(self.state.groups) < self.scale.groups:
            parent = self.rng.choice(tiers)
            region = REGIONS[list(self.state.groups).index(parent) % len(REGIONS)] if parent else REGIONS[0]
            depth_type = "Business Unit" if self.rng.random() < 0.35 else "Department"
            pool = BUSINESS_UNITS if depth_type == "Business Unit" else DEPARTMENTS
            name = f"{self.rng.choice(pool)} {self.state.groups[parent]['groupName'].split(' ')[-1]}"
            group_id = self.add_group(name, types[depth_type], region, parent)
            if depth_type == "Business Unit":
                tiers.append(group_id)

    def add_group(self, name: str, type_id: str, region: tuple[str, ...], parent: str | None) -> str:
        """One group record (without its parents, which are links) and its parent edge."""
        group_id = self.uid()
        _, city, state_name, state_code, zip_code, country, country_code, currency = region
        created = self.moment(1000, 600)
        number = len(self.state.groups) + 1
        record: Record = {
            "id": group_id,
            "tenantId": self.tenant_id,
            "groupId": str(1000 + number),
            "groupName": name,
            "createdOn": created,
            "updatedOn": self.moment(500, 30),
            "isSynced": self.rng.random() < 0.5,
            "tenantGroupTypeId": type_id,
            "isDeleted": False,
            "disableOption": "NA",
            "baseCurrency": currency,
            "displayName": name,
            "legalName": f"{name} Ltd" if parent is None else name,
            "externalId": f"ORG-{number:04d}",
            "instanceId": "",
            "status": "ACTIVE",
            "address": {
                "id": self.uid(),
                "groupId": group_id,
                "street1": f"{self.rng.randint(1, 400)} Market Street",
                "street2": f"Floor {self.rng.randint(1, 30)}",
                "city": city,
                "state": state_name,
                "stateCode": state_code,
                "zipCode": zip_code,
                "country": country,
                "countryCode": country_code,
                "createdOn": created,
                "updatedOn": created,
            },
            "decisionsCount": 0,
            "delegationsCount": 0,
        }
        self.state.groups[group_id] = record
        self.state.group_parents[group_id] = (
            [ParentLink(link_id=self.uid(), parent_id=parent, created_at=created)] if parent else []
        )
        return group_id

    def seed_users(self) -> None:
        """Users in a manager tree: the first is the integration administrator at the top."""
        role_ids, position_ids, group_ids = (
            list(self.state.roles),
            list(self.state.positions),
            list(self.state.groups),
        )
        for index in range(self.scale.users):
            user_id = self.uid()
            first, last = self.rng.choice(FIRST_NAMES), self.rng.choice(LAST_NAMES)
            if index == 0:
                first, last = "Integration", "Admin"
            user = self.user_record(user_id, index, first, last)
            user["userRoles"] = [
                self.user_role(role_id)
                for role_id in self.rng.sample(role_ids, 1 + (index == 0) + (index % 7 == 0))
            ]
            user["userPositions"] = [
                self.user_position(user_id, position_id) for position_id in self.rng.sample(position_ids, 1)
            ]
            user["userGroups"] = [
                self.user_group(user_id, group_id) for group_id in self.rng.sample(group_ids, 1)
            ]
            self.state.users[user_id] = user
            # The top user reports to itself: the spec's manager object is never null.
            manager = (
                user_id if index == 0 else list(self.state.users)[self.rng.randint(0, max(0, index // 3))]
            )
            self.state.manager_of[user_id] = manager
        self.state.current_user_id = next(iter(self.state.users))

    def user_record(self, user_id: str, index: int, first: str, last: str) -> Record:
        """A user with every field of spec 2.1 except manager (composed on read) and the nested arrays."""
        domain = f"{self.label.lower().replace(' ', '')}.example.com"
        email = f"{first.lower()}.{last.lower()}.{index}@{domain}"
        status = (
            "ACTIVE" if self.rng.random() < 0.92 or index == 0 else self.rng.choice(("INACTIVE", "INVITED"))
        )
        start = self.moment(3000, 400)
        return {
            "id": user_id,
            "userId": str(5000 + index),
            "loginId": email,
            "idpUserId": f"idp|{self.uid()[:18]}",
            "activeTenantId": self.tenant_id,
            "email": email,
            "name": f"{first} {last}",
            "displayName": f"{first} {last}",
            "isSAML": self.rng.random() < 0.6,
            "mobilePhone": f"+1 (555) {self.rng.randint(100, 999)}-{self.rng.randint(1000, 9999)}",
            "firstName": first,
            "lastName": last,
            "profileImageUrl": None,
            "currencyName": "US Dollar",
            "currencyCode": "USD",
            "status": status,
            "accountType": "STANDARD",
            "autoProvisioned": False,
            "employeeId": f"E{100000 + index}",
            "employeeNumber": str(100000 + index),
            "employeeType": self.rng.choice(("Employee", "Contractor")),
            "employmentType": "Full-time",
            "dateFormat": "MM/DD/YYYY",
            "userType": "HUMAN",
            "sourceId": None,
            "actorType": "USER",
            "aiAgentType": None,
            "startDate": start,
            "terminationDate": None,
            "customAttributes": {"costCenter": f"CC-{self.rng.randint(100, 999)}"},
            "externalId": f"HR-{100000 + index}",
            "instanceId": None,
            "systemIntegrationId": None,
            "displayLanguage": "en",
            "columnViewSettings": None,
            "searchData": [],
            "managerSync": True,
            "isDeleted": False,
            "isExpirePassword": False,
            "createdOn": start,
            "lastLoginDate": self.moment(60, 1),
            "createdBy": None,
            "updatedOn": self.moment(300, 2),
            "updatedBy": None,
            "deletedOn": None,
            "delegationsReceived": 0,
            "delegationsIssued": 0,
            "dashboardData": [{"x": 0, "y": 0, "w": 6, "h": 4, "i": "delegations"}],
            "isImpersonated": False,
        }

    def user_role(self, role_id: str) -> Record:
        """A UserRole (spec 2.3) for a tenant role."""
        stamp = self.moment(600, 100)  # drawn before the id: the seeded sequence must not change
        return links.role(self.state, self.uid(), role_id, stamp)

    def user_position(self, user_id: str, position_id: str) -> Record:
        """A UserPosition (spec 2.4)."""
        stamp = self.moment(600, 100)
        return links.position(self.state, self.uid(), user_id, position_id, stamp)

    def user_group(self, user_id: str, group_id: str) -> Record:
        """A UserGroup (spec 2.5)."""
        return links.group(self.state, self.uid(), user_id, group_id)

    # -- documents, decisions, delegations ---------------------------------------------------------------

    def seed_documents(self) -> None:
        """Documents with changelog revisions."""
        for index in range(self.scale.documents):
            document_id = self.uid()
            kind, icon, file_type = self.rng.choice(DOCUMENT_TYPES)
            self.state.documents[document_id] = {
                "id": document_id,
                "documentDisplayId": str(7000 + index),
                "documentName": f"{self.rng.choice(list(SECTIONS))} {kind} {index + 1}",
                "documentTypeName": kind,
                "documentIcon": icon,
                "documentFileType": file_type,
                "documentStatus": "PUBLISHED",
                "documentUrl": f"https://files.example.com/{document_id}.{file_type}",
            }
            self.state.document_revisions[document_id] = [
                self.state.new_revision_id() for _ in range(self.rng.randint(1, 5))
            ]

    def seed_decisions(self) -> None:
        """Decisions across sections and categories, with groups, authorities and documents."""
        sections = [
            (self.uid(), name, [(self.uid(), cat) for cat in cats]) for name, cats in SECTIONS.items()
        ]
        authority_types = [
            (self.uid(), name, icon, order) for order, (name, icon) in enumerate(AUTHORITY_TYPES)
        ]
        users, groups, documents = list(self.state.users), list(self.state.groups), list(self.state.documents)
        for index in range(self.scale.decisions):
            section_id, section_name, categories = self.rng.choice(sections)
            category_id, category_name = self.rng.choice(categories)
            self.add_decision(
                index,
                (section_id, section_name, category_id, category_name),
                authority_types,
                users,
                groups,
                documents,
            )

    def add_decision(
        self,
        index: int,
        where: tuple[str, str, str, str],
        authority_types: list[tuple[str, str, str, int]],
        users: list[str],
        groups: list[str],
        documents: list[str],
    ) -> None:
        """One decision record (spec 2.10)."""
        decision_id = self.uid()
        section_id, section_name, category_id, category_name = where
        created = self.moment(700, 30)
        creator, owner = self.rng.choice(users), self.rng.choice(users)
        status = DECISION_STATUSES[index % len(DECISION_STATUSES)]
        authorities = [
            self.authority(decision_id, authority_types[slot], VALUE_TYPES[(index + slot) % len(VALUE_TYPES)])
            for slot in range(1 + index % 3)
        ]
        decision: Record = {
            "id": decision_id,
            "decisionId": decision_id,
            "tenantId": self.tenant_id,
            "name": f"{self.rng.choice(VERBS)} {category_name.lower()} #{index + 1}",
            "description": f"Authority to act on {category_name.lower()} within {section_name}.",
            "guidance": "Escalate to the next level when the limit is exceeded.",
            "sectionId": section_id,
            "categoryId": category_id,
            "sectionName": section_name,
            "categoryName": category_name,
            "status": status,
            "previousStatus": "DRAFT",
            "createdBy": creator,
            "updatedBy": creator,
            "owner": owner,
            "createdByUsername": self.state.users[creator]["name"],
            "ownerUsername": self.state.users[owner]["name"],
            "updatedByUsername": self.state.users[creator]["name"],
            "createdAt": created,
            "updatedAt": self.moment(29, 1),
            "copiedFrom": None,
            "conditionEnabled": index % 4 == 0,
            "roleEnabled": index % 5 == 0,
            "delegable": index % 3 != 0,
            "decisionDisplayId": str(100000 + index),
            "delegationPathway": ["Board", section_name, category_name],
            "link": f"https://app.example.com/decisions/{decision_id}",
            "decisionGroups": [
                self.decision_group(decision_id, gid) for gid in self.rng.sample(groups, 1 + index % 2)
            ],
            "decisionAuthorities": authorities,
            "decisionDocuments": [
                self.decision_document(decision_id, doc, pinned=slot == 0)
                for slot, doc in enumerate(self.rng.sample(documents, min(len(documents), index % 3)))
            ],
            "delegations": 0,
            "ownerUserProfileUrl": "",
            "createdByUserProfileUrl": "",
            "updatedByUserProfileUrl": "",
            "permissions": [
                {"relationship_key": "can_edit", "allowed": True},
                {"relationship_key": "can_delete", "allowed": False},
            ],
            "createdByDetails": {"id": creator},
            "updatedByDetails": {"id": creator},
            "ownerDetails": {"id": owner},
            "isRequestActionCompleted": False,
            "authorityLimitSortPrecedence": sort_precedence(authorities),
        }
        self.state.decisions[decision_id] = decision

    def authority(self, decision_id: str, kind: tuple[str, str, str, int], value_type: str) -> Record:
        """An authority limit of the given value type, with a value and unit that fit it."""
        type_id, name, icon, order = kind
        value, unit, operator = limit_value(self.rng, value_type)
        text = value if value_type == "Authorized" else f"{operator} {value} {unit}".strip()
        return {
            "id": self.uid(),
            "denormalizedDecisionId": decision_id,
            "authorityTypeId": type_id,
            "authorityType": name,
            "authorityTypeOrder": order,
            "authorityTypeIcon": icon,
            "authorityLimit": text,
            "authorityLimitValueType": value_type,
            "authorityLimitOperator": operator,
            "authorityLimitValue": value,
            "authorityLimitValueUnit": unit,
        }

    def decision_group(self, decision_id: str, group_id: str) -> Record:
        """A decision's group link."""
        group = self.state.groups[group_id]
        group["decisionsCount"] += 1
        return {
            "id": self.uid(),
            "denormalizedDecisionId": decision_id,
            "groupId": group_id,
            "tenantGroupTypeId": group["tenantGroupTypeId"],
            "displayName": group["displayName"],
            "groupName": group["groupName"],
        }

    def decision_document(self, decision_id: str, document_id: str, pinned: bool) -> Record:
        """A decision's document link."""
        document = self.state.documents[document_id]
        return {
            "id": self.uid(),
            "denormalizedDecisionId": decision_id,
            "documentId": document_id,
            "documentName": document["documentName"],
            "documentUrl": document["documentUrl"],
            "documentTypeName": document["documentTypeName"],
            "documentIcon": document["documentIcon"],
            "documentDescription": f"{document['documentTypeName']} governing this decision",
            "documentFileType": document["documentFileType"],
            "isPinned": pinned,
            "documentDisplayId": document["documentDisplayId"],
            "documentStatus": document["documentStatus"],
            "documentFileLink": document["documentUrl"],
        }

    def seed_delegations(self) -> None:
        """Delegations of decisions from one user to another, with changelog revisions."""
        decisions, users = list(self.state.decisions), list(self.state.users)
        for index in range(self.scale.delegations):
            decision = self.state.decisions[self.rng.choice(decisions)]
            issuer, recipient = self.rng.sample(users, 2)
            record_id = self.uid()
            self.state.delegations[record_id] = {
                "id": record_id,
                "tenantId": self.tenant_id,
                "delegationDisplayId": str(300000 + index),
                "decisionId": decision["id"],
                "decisionName": decision["name"],
                "status": DELEGATION_STATUSES[index % len(DELEGATION_STATUSES)],
                "issuerType": ISSUER_TYPES[index % len(ISSUER_TYPES)],
                "issuerId": issuer,
                "recipientId": recipient,
                "recipientName": self.state.users[recipient]["name"],
                "startDate": self.moment(300, 30),
                "endDate": None if index % 2 else self.moment(-30, -400),
                "createdAt": self.moment(400, 31),
                "updatedAt": self.moment(29, 1),
            }
            decision["delegations"] += 1
            self.state.users[issuer]["delegationsIssued"] += 1
            self.state.users[recipient]["delegationsReceived"] += 1
            self.state.delegation_revisions[record_id] = [
                self.state.new_revision_id() for _ in range(self.rng.randint(1, 6))
            ]

    # -- actions, matrices, reports, notifications -------------------------------------------------------

    def seed_actions(self) -> None:
        """Action types, templates, priorities, statuses and actions."""
        for kind, icon in (
            ("REVIEW", "eye"),
            ("APPROVAL", "check"),
            ("ATTESTATION", "shield"),
            ("TASK", "list"),
        ):
            type_id = self.uid()
            stamp = self.moment(900, 500)
            self.state.action_types[type_id] = {
                "id": type_id,
                "tenantId": self.tenant_id,
                "type": kind,
                "name": kind.title(),
                "typeIcon": icon,
                "status": True,
                "isCustom": kind == "ATTESTATION",
                "isDeleted": False,
                "deletedAt": stamp,
                "createdAt": stamp,
                "updatedAt": stamp,
            }
        for index, type_id in enumerate(list(self.state.action_types) * 2):
            template_id = self.uid()
            stamp = self.moment(800, 400)
            action_kind = self.state.action_types[type_id]
            self.state.action_templates[template_id] = {
                "id": template_id,
                "tenantId": self.tenant_id,
                "name": f"{action_kind['name']} template {index + 1}",
                "description": f"Standard {action_kind['name'].lower()} steps",
                "source": "SYSTEM" if index < 4 else "CUSTOM",
                "typeId": type_id,
                "status": True,
                "isDeleted": False,
                "deletedAt": stamp,
                "createdAt": stamp,
                "updatedAt": stamp,
            }
        for name, colour in (("Low", "green"), ("Medium", "amber"), ("High", "orange"), ("Critical", "red")):
            pid = self.uid()
            self.state.action_priorities[pid] = {
                "id": pid,
                "actionPriorityName": name,
                "isEnabled": True,
                "colorName": colour,
            }
        for name in ("Open", "In Progress", "Done"):
            sid = self.uid()
            self.state.action_statuses[sid] = {"id": sid, "actionStatusName": name, "isEnabled": True}
        for index in range(self.scale.actions):
            self.add_action(index)

    def add_action(self, index: int) -> None:
        """One action (spec 2.7); its nested objects are composed on read from the ids kept here."""
        action_id = self.uid()
        decision = self.state.decisions[self.rng.choice(list(self.state.decisions))]
        delegations = [
            d for d in list(self.state.delegations.values())[:50] if d["decisionId"] == decision["id"]
        ]
        owner = self.rng.choice(list(self.state.users))
        created = self.moment(200, 10)
        self.state.actions[action_id] = {
            "id": action_id,
            "actionId": str(9000 + index),
            "tenantId": self.tenant_id,
            "actionName": f"Review {decision['name']}",
            "description": "Confirm the authority is still right.",
            "actionTypeId": self.rng.choice(list(self.state.action_types)),
            "actionTemplateId": self.rng.choice(list(self.state.action_templates)),
            "actionPriorityId": self.rng.choice(list(self.state.action_priorities)),
            "actionStatusId": self.rng.choice(list(self.state.action_statuses)),
            "decisionId": decision["id"],
            "decisionDisplayId": decision["decisionDisplayId"],
            "delegationId": delegations[0]["id"] if delegations else "",
            "delegationDisplayId": delegations[0]["delegationDisplayId"] if delegations else "",
            "documentId": "",
            "documentDisplayId": "",
            "roleId": "",
            "link": f"https://app.example.com/actions/{action_id}",
            "ownerId": owner,
            "dueDate": self.moment(-10, -90),
            "createdAt": created,
            "updatedAt": created,
            "createdBy": self.state.users[owner]["name"],
            "updatedBy": self.state.users[owner]["name"],
            "deletedBy": "",
            "deletedOn": created,
            "copiedFrom": "",
            "isDeleted": False,
            "isSystemGenerated": index % 5 == 0,
            "assigneeIds": self.rng.sample(list(self.state.users), 2),
            "files": [
                {
                    "id": self.uid(),
                    "fileUrl": f"https://files.example.com/{action_id}.pdf",
                    "fileType": "pdf",
                    "fileName": "evidence.pdf",
                    "createdAt": created,
                }
            ],
            "permissions": [{"allowed": True, "relationship_key": "can_edit"}],
        }

    def seed_matrices(self) -> None:
        """Matrices that present decisions to users, groups and positions."""
        for name, active in (("Active", True), ("Retired", False)):
            sid = self.uid()
            self.state.matrix_statuses[sid] = {"id": sid, "statusName": name, "isActive": active}
        for index in range(self.scale.matrices):
            matrix_id = self.uid()
            stamp = self.moment(300, 10)
            self.state.matrices[matrix_id] = {
                "id": matrix_id,
                "matrixId": str(600 + index),
                "matrixName": f"Delegation matrix {index + 1}",
                "matrixDescription": "Who may approve what, by region",
                "link": f"https://app.example.com/m/{matrix_id}",
                "tenantId": self.tenant_id,
                "ownerId": self.state.current_user_id,
                "copiedFromMatrix": "",
                "roleMatrix": False,
                "authorityMatrix": True,
                "isFavorite": index == 0,
                "isUserSavedPersonalView": False,
                "createdOn": stamp,
                "updatedOn": stamp,
                "currentTab": "decisions",
                "matrixStatusId": next(iter(self.state.matrix_statuses)),
                "authorityRoleIds": [],
                "groupIds": self.rng.sample(list(self.state.groups), 2),
                "positionIds": self.rng.sample(list(self.state.positions), 2),
                "userIds": self.rng.sample(list(self.state.users), 2),
                "decisionIds": self.rng.sample(list(self.state.decisions), min(5, len(self.state.decisions))),
                "externalSharing": {
                    "isEnabled": False,
                    "isExpirationEnabled": False,
                    "expirationDate": stamp,
                    "isPasswordRequired": False,
                    "password": "",
                },
            }

    def seed_reports(self) -> None:
        """Reports; only their status matters to the interface (E4)."""
        for index in range(self.scale.reports):
            report_id = self.uid()
            status = ("PUBLISHED", "DRAFT", "ARCHIVED")[index % 3]
            self.state.reports[report_id] = {
                "id": report_id,
                "tenantId": self.tenant_id,
                "name": f"Quarterly authority report {index + 1}",
                "status": status,
                "previousStatus": status,
                "updatedAt": self.moment(100, 1),
            }

    def seed_notifications(self) -> None:
        """Notifications of the current user, most of them DELEGATION_ISSUED."""
        delegations = list(self.state.delegations.values())
        for index in range(self.scale.notifications):
            delegation = delegations[index % len(delegations)]
            notification_id = self.uid()
            created = self.moment(60, 1)
            self.state.notifications[notification_id] = {
                "id": notification_id,
                "tenantId": self.tenant_id,
                "userId": self.state.current_user_id,
                "templateKey": "DELEGATION_ISSUED" if index % 4 else "ACTION_ASSIGNED",
                "category": "Delegations" if index % 4 else "Actions",
                "title": "Delegation issued" if index % 4 else "Action assigned",
                "message": f"{delegation['decisionName']} was delegated to {delegation['recipientName']}",
                "isActionable": index % 4 != 0,
                "status": "UNREAD" if index % 3 else "READ",
                "createdAt": created,
                "readAt": created,
                "entityType": "delegation",
                "entityId": delegation["id"],
                "relativeTime": f"{1 + index % 50} days ago",
                "actionUrl": f"https://app.example.com/delegations/{delegation['id']}",
                "payload": {"delegationDisplayId": delegation["delegationDisplayId"]},
            }


def limit_value(rng: random.Random, value_type: str) -> tuple[str, str, str]:
    """A limit value, unit and operator that fit an authority value type."""
    if value_type == "Currency":
        value = rng.choice(("5000", "25000", "100000", "250000", "1000000", "Unlimited"))
        return value, rng.choice(("USD", "EUR", "GBP")), "<="
    if value_type == "Number":
        return str(rng.randint(1, 50)), "items", "<="
    if value_type in ("Days", "Months", "Years"):
        return str(rng.randint(1, 36)), value_type.lower(), "<="
    if value_type == "Percentage":
        return str(rng.choice((5, 10, 15, 25, 50))), "%", "<="
    return "Authorized", "", "="


def sort_precedence(authorities: list[dict[str, Any]]) -> float:
    """A decision's authority-limit sort key: its largest currency limit (Unlimited sorts last)."""
    values = [
        float("1e15") if item["authorityLimitValue"] == "Unlimited" else float(item["authorityLimitValue"])
        for item in authorities
        if item["authorityLimitValueType"] == "Currency"
    ]
    return max(values, default=0.0)


def seed_tenant(seed: int, tenant_id: str, scale: Scale, label: str) -> TenantState:
    """Seed one tenant deterministically from ``seed``."""
    return Seeder(seed, tenant_id, scale, label).build()
