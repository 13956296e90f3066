"""Wire models: request bodies enforce the spec's constraints, response records follow its nullability."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from models.actions import (
    Action,
    ActionFileInput,
    ActionTemplate,
    DeleteActions,
    UpdateAction,
    ValidateAction,
    ValidateActionResult,
)
from models.auth import AccessKeyExchange, AccessToken
from models.base import Envelope, Page, RequestModel, ServiceModel, canonical_id, format_timestamp, is_uuid
from models.decisions import Decision, DecisionProjection, Permission
from models.delegations import Delegation
from models.groups import AddressUpdate, Group, UpdateGroup
from models.matrices import Matrix, UpdateMatrix
from models.notifications import MarkAllReadResult, Notification, ToggleNotificationStatus
from models.positions import Position
from models.queries import DecisionQuery
from models.reports import ReportStatusResult, UpdateReportStatuses
from models.users import UpdateUserEntities, User, UserPosition, UserStatus
from tests import samples

TENANT = samples.TENANT
OTHER = "0f1e2d3c-4b5a-4968-8776-5a4b3c2d1e0f"

# --- request bodies --------------------------------------------------------------------------------------

MINIMAL: dict[type[RequestModel], dict[str, Any]] = {
    UpdateUserEntities: {"tenantId": TENANT},
    UpdateGroup: {},
    UpdateReportStatuses: {"reportIds": [OTHER], "status": "ARCHIVED", "operation": "UPDATE"},
    DeleteActions: {"ids": ["311"]},
    ValidateAction: {"tenantId": TENANT},
    UpdateAction: {},
    UpdateMatrix: {},
    ToggleNotificationStatus: {},
    AccessKeyExchange: {"accessKey": "ak_live_123"},
}
"""The smallest valid body of each request model."""

FULL: list[tuple[type[RequestModel], dict[str, Any]]] = [
    (
        UpdateUserEntities,
        {
            "tenantId": TENANT,
            "managerId": OTHER,
            "roleIds": [OTHER],
            "positionIds": [OTHER, TENANT],
            "groups": [{"groupId": OTHER, "isPrimaryOrg": True}, {"groupId": TENANT}],
            "email": "jane.doe@acme.io",
            "name": "Jane Doe",
            "displayName": "Jane Doe",
            "firstName": "Jane",
            "lastName": "Doe",
            "accountType": "STANDARD",
            "userType": "USER",
            "employeeId": "E-0042",
            "employeeNumber": "42",
            "employeeType": "FTE",
            "employmentType": "PERMANENT",
            "mobilePhone": "+1 (415) 555-0100",
            "profileImageUrl": "https://img.example/j.png",
            "currencyCode": "EUR",
            "currencyName": "Euro",
            "status": "INACTIVE",
            "dateFormat": "DD/MM/YYYY",
            "sourceId": "hr",
            "actorType": "HUMAN",
            "aiAgentType": "NONE",
            "startDate": "2021-09-01T00:00:00.000Z",
            "terminationDate": "2025-03-31T17:00:00.000Z",
            "customAttributes": {"costCenter": "CC-100", "level": 3},
        },
    ),
    (
        UpdateGroup,
        {
            "groupName": "Finance",
            "displayName": "Finance",
            "legalName": "Acme Finance Ltd",
            "status": "INACTIVE",
            "isDeleted": False,
            "addParentGroupIds": [OTHER],
            "removeParentGroupIds": [TENANT],
            "disableOption": "KEEP_ASSOCIATIONS",
            "address": {"street1": "1 Main St", "city": "Dublin", "zipCode": "D01", "countryCode": "IE"},
        },
    ),
    (UpdateReportStatuses, {"reportIds": [OTHER, TENANT], "operation": "RESTORE"}),
    (ValidateAction, {"tenantId": TENANT, "delegationId": OTHER, "decisionId": OTHER}),
    (
        UpdateAction,
        {
            "actionName": "Review",
            "description": "Check the limit",
            "actionTypeId": OTHER,
            "actionTemplateId": OTHER,
            "actionPriorityId": OTHER,
            "actionStatusId": OTHER,
            "decisionId": OTHER,
            "delegationId": OTHER,
            "documentId": OTHER,
            "ownerId": OTHER,
            "dueDate": "2025-04-01T00:00:00.000Z",
            "assigneeIds": [OTHER, TENANT],
            "files": [{"fileUrl": "https://f.example/a.pdf", "fileType": "pdf", "fileName": "a.pdf"}],
        },
    ),
    (
        UpdateMatrix,
        {
            "matrixName": "Finance",
            "matrixDescription": "Who approves what",
            "matrixStatusId": "ms1",
            "tenantId": TENANT,
            "ownerId": "u-1",
            "currentTab": "decisions",
            "authorityMatrix": True,
            "roleMatrix": False,
            "authorityRoleIds": [OTHER],
            "groupIds": [OTHER],
            "positionIds": [OTHER],
            "userIds": [OTHER],
            "decisionIds": [OTHER],
            "matrixExternalSharing": {
                "isEnabled": True,
                "isExpirationEnabled": True,
                "expirationDate": "2025-12-31T23:59:59.000Z",
                "isPasswordRequired": True,
                "password": "s3cret",
            },
        },
    ),
    (ToggleNotificationStatus, {"status": "READ"}),
]
"""A body of each request model with every field set (E2 and the access-key body have only one field)."""

VALID = [pytest.param(model, body, id=f"{model.__name__}-full") for model, body in FULL] + [
    pytest.param(model, body, id=f"{model.__name__}-minimal") for model, body in MINIMAL.items()
]


@pytest.mark.parametrize(("model", "body"), VALID)
def test_request_accepts_valid_body_and_sends_it_back_unchanged(
    model: type[RequestModel], body: dict[str, Any]
) -> None:
    assert model.model_validate(body).to_wire() == body


LENGTH_LIMITS: list[tuple[type[RequestModel], str, int]] = [
    (UpdateUserEntities, "name", 50),
    (UpdateUserEntities, "displayName", 50),
    (UpdateUserEntities, "firstName", 50),
    (UpdateUserEntities, "lastName", 20),
    (UpdateUserEntities, "accountType", 20),
    (UpdateUserEntities, "userType", 20),
    (UpdateUserEntities, "employeeType", 20),
    (UpdateUserEntities, "employmentType", 20),
    (UpdateUserEntities, "profileImageUrl", 50),
    (UpdateUserEntities, "sourceId", 100),
    (UpdateUserEntities, "actorType", 50),
    (UpdateUserEntities, "aiAgentType", 50),
    (UpdateUserEntities, "mobilePhone", 25),
    (UpdateGroup, "groupName", 100),
    (UpdateGroup, "displayName", 100),
    (UpdateGroup, "legalName", 100),
]


@pytest.mark.parametrize(
    ("model", "key", "limit"), LENGTH_LIMITS, ids=lambda v: getattr(v, "__name__", str(v))
)
def test_request_max_length(model: type[RequestModel], key: str, limit: int) -> None:
    at_limit = {**MINIMAL[model], key: "1" * limit}
    assert model.model_validate(at_limit).to_wire()[key] == "1" * limit
    with pytest.raises(ValidationError, match=key):
        model.model_validate({**MINIMAL[model], key: "1" * (limit + 1)})


def test_email_max_length_is_100() -> None:
    at_limit = "a" * 64 + "@" + "b" * 31 + ".com"
    assert len(at_limit) == 100
    assert UpdateUserEntities.model_validate({"tenantId": TENANT, "email": at_limit}).email == at_limit
    with pytest.raises(ValidationError, match="email"):
        UpdateUserEntities.model_validate({"tenantId": TENANT, "email": "a" + at_limit})


def _user(**body: Any) -> dict[str, Any]:
    return {"tenantId": TENANT, **body}


BROKEN: list[tuple[str, type[RequestModel], dict[str, Any]]] = [
    ("E1 bad email", UpdateUserEntities, _user(email="jane.doe@")),
    ("E1 email without at", UpdateUserEntities, _user(email="jane.doe.acme.io")),
    ("E1 phone too short", UpdateUserEntities, _user(mobilePhone="555-01")),
    ("E1 phone bad char", UpdateUserEntities, _user(mobilePhone="555-0100 ext 2")),
    ("E1 phone 26 chars", UpdateUserEntities, _user(mobilePhone="1" * 26)),
    ("E1 missing tenantId", UpdateUserEntities, {"firstName": "Jane"}),
    ("E1 bad tenantId", UpdateUserEntities, _user(tenantId="not-a-uuid")),
    ("E1 bad managerId", UpdateUserEntities, _user(managerId="1002")),
    ("E1 bad roleIds item", UpdateUserEntities, _user(roleIds=[OTHER, "admin"])),
    ("E1 bad positionIds item", UpdateUserEntities, _user(positionIds=["pos-1"])),
    ("E1 groups without groupId", UpdateUserEntities, _user(groups=[{"isPrimaryOrg": True}])),
    ("E1 bad groups groupId", UpdateUserEntities, _user(groups=[{"groupId": "12"}])),
    ("E1 unknown field in groups", UpdateUserEntities, _user(groups=[{"groupId": OTHER, "primary": True}])),
    ("E1 bad status", UpdateUserEntities, _user(status="SUSPENDED")),
    ("E1 bad startDate", UpdateUserEntities, _user(startDate="next monday")),
    ("E1 customAttributes not an object", UpdateUserEntities, _user(customAttributes=["a"])),
    ("E1 unknown field", UpdateUserEntities, _user(lastname="Doe")),
    ("E3 bad status", UpdateGroup, {"status": "DELETED"}),
    ("E3 bad disableOption", UpdateGroup, {"disableOption": "KEEP"}),
    ("E3 bad addParentGroupIds item", UpdateGroup, {"addParentGroupIds": ["12"]}),
    ("E3 bad removeParentGroupIds item", UpdateGroup, {"removeParentGroupIds": ["12"]}),
    ("E3 unknown field in address", UpdateGroup, {"address": {"zip": "D01"}}),
    ("E3 unknown field", UpdateGroup, {"parentGroupIds": [OTHER]}),
    ("E4 UPDATE without status", UpdateReportStatuses, {"reportIds": [OTHER], "operation": "UPDATE"}),
    ("E4 bad status", UpdateReportStatuses, {"reportIds": [OTHER], "status": "LIVE", "operation": "UPDATE"}),
    (
        "E4 bad operation",
        UpdateReportStatuses,
        {"reportIds": [OTHER], "status": "DRAFT", "operation": "DELETE"},
    ),
    ("E4 missing operation", UpdateReportStatuses, {"reportIds": [OTHER], "status": "DRAFT"}),
    ("E4 missing reportIds", UpdateReportStatuses, {"operation": "RESTORE"}),
    ("E4 bad reportIds item", UpdateReportStatuses, {"reportIds": ["r-1"], "operation": "RESTORE"}),
    ("E4 unknown field", UpdateReportStatuses, {"reportIds": [OTHER], "operation": "RESTORE", "ids": []}),
    ("E2 ids empty", DeleteActions, {"ids": []}),
    ("E2 ids missing", DeleteActions, {}),
    ("E2 unknown field", DeleteActions, {"ids": ["1"], "force": True}),
    ("E5 missing tenantId", ValidateAction, {"decisionId": OTHER}),
    ("E5 bad tenantId", ValidateAction, {"tenantId": "acme"}),
    ("E5 bad decisionId", ValidateAction, {"tenantId": TENANT, "decisionId": "27"}),
    ("E5 unknown field", ValidateAction, {"tenantId": TENANT, "actionId": OTHER}),
    ("E6 bad ownerId", UpdateAction, {"ownerId": "jane"}),
    ("E6 bad assigneeIds item", UpdateAction, {"assigneeIds": ["jane"]}),
    ("E6 bad dueDate", UpdateAction, {"dueDate": "tomorrow"}),
    ("E6 file missing fileUrl", UpdateAction, {"files": [{"fileType": "pdf", "fileName": "a.pdf"}]}),
    ("E6 unknown field", UpdateAction, {"priority": "High"}),
    ("E7 bad groupIds item", UpdateMatrix, {"groupIds": ["g-1"]}),
    ("E7 bad decisionIds item", UpdateMatrix, {"decisionIds": ["27"]}),
    ("E7 bad roleMatrix", UpdateMatrix, {"roleMatrix": "sometimes"}),
    ("E7 unknown field in sharing", UpdateMatrix, {"matrixExternalSharing": {"enabled": True}}),
    ("E7 unknown field", UpdateMatrix, {"matrixId": "7"}),
    ("E13 bad status", ToggleNotificationStatus, {"status": "ARCHIVED"}),
    ("E13 unknown field", ToggleNotificationStatus, {"read": True}),
    ("auth empty accessKey", AccessKeyExchange, {"accessKey": ""}),
    ("auth missing accessKey", AccessKeyExchange, {}),
    ("auth unknown field", AccessKeyExchange, {"accessKey": "k", "tenantId": TENANT}),
]


@pytest.mark.parametrize(("model", "body"), [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_request_rejects_constraint_break(model: type[RequestModel], body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(body)


@pytest.mark.parametrize("phone", ["5550100", "+44 20 7946 0958", "(415) 555.0100", "1" * 25])
def test_phone_pattern_accepts(phone: str) -> None:
    assert UpdateUserEntities.model_validate(_user(mobilePhone=phone)).mobile_phone == phone


def test_to_wire_sends_only_set_fields_by_wire_name() -> None:
    body = UpdateUserEntities(tenant_id=TENANT, first_name="Jane", status=UserStatus.INACTIVE)
    assert body.to_wire() == {"tenantId": TENANT, "firstName": "Jane", "status": "INACTIVE"}
    group = UpdateGroup(add_parent_group_ids=[OTHER], address=AddressUpdate(zip_code="D01"))
    assert group.to_wire() == {"addParentGroupIds": [OTHER], "address": {"zipCode": "D01"}}
    due = datetime(2025, 4, 1, 9, 30, 15, 250000, tzinfo=UTC)
    action = UpdateAction(due_date=due, files=[ActionFileInput(file_url="u", file_type="pdf", file_name="a")])
    assert action.to_wire() == {
        "dueDate": "2025-04-01T09:30:15.250Z",
        "files": [{"fileUrl": "u", "fileType": "pdf", "fileName": "a"}],
    }
    assert ValidateAction(tenant_id=TENANT).to_wire() == {"tenantId": TENANT}
    assert AccessKeyExchange(access_key="ak").to_wire() == {"accessKey": "ak"}


def test_report_restore_needs_no_status() -> None:
    body = UpdateReportStatuses.model_validate({"reportIds": [OTHER], "operation": "RESTORE"})
    assert body.status is None
    assert body.to_wire() == {"reportIds": [OTHER], "operation": "RESTORE"}


def test_secrets_stay_out_of_repr() -> None:
    assert "ak_live" not in repr(AccessKeyExchange(access_key="ak_live_123"))
    assert "eyJ" not in repr(AccessToken(token="eyJhbGciOi"))


# --- response records ------------------------------------------------------------------------------------

RESPONSES: list[tuple[type[ServiceModel], Callable[[], dict[str, Any]], str, str | None]] = [
    # (model, sample, a non-nullable key, a nullable key or None)
    (User, samples.user, "idpUserId", "loginId"),
    (UserPosition, samples.user_position, "positionName", "externalId"),
    (Group, samples.group, "groupName", None),
    (Decision, samples.decision, "sectionName", "updatedByUsername"),
    # The list extensions' records are not in the spec: only their id is promised.
    (Delegation, samples.delegation, "id", "recipientName"),
    (Position, samples.position, "id", "positionName"),
    (Action, samples.action, "owner", None),
    (ActionTemplate, samples.action_template, "type", None),
    (Matrix, samples.matrix, "matrixDelegation", None),
    (Notification, samples.notification, "readAt", None),
    (ReportStatusResult, samples.report_status_result, "failedIds", None),
    (ValidateActionResult, samples.validate_action_result, "isExist", None),
    (MarkAllReadResult, lambda: {"count": 7}, "count", None),
    (AccessToken, lambda: {"token": "eyJhbGciOi"}, "token", None),
]
RESPONSE_IDS = [case[0].__name__ for case in RESPONSES]


def _extras(model: BaseModel) -> Iterator[str]:
    """Every unknown field kept anywhere inside ``model``, as a dotted path."""
    yield from (model.model_extra or {})
    for name in type(model).model_fields:
        values = getattr(model, name)
        for value in values if isinstance(values, list) else [values]:
            if isinstance(value, BaseModel):
                yield from (f"{name}.{extra}" for extra in _extras(value))


@pytest.mark.parametrize(("model", "sample"), [case[:2] for case in RESPONSES], ids=RESPONSE_IDS)
def test_response_reads_sample_and_round_trips(
    model: type[ServiceModel], sample: Callable[[], dict[str, Any]]
) -> None:
    record = model.model_validate(sample())
    assert list(_extras(record)) == []  # every key of the sample is a declared field: aliases are right
    assert record.model_dump(mode="json", by_alias=True, exclude_unset=True) == sample()


@pytest.mark.parametrize(("model", "sample"), [case[:2] for case in RESPONSES], ids=RESPONSE_IDS)
def test_response_keeps_unknown_field(
    model: type[ServiceModel], sample: Callable[[], dict[str, Any]]
) -> None:
    body = {**sample(), "futureField": {"added": "later"}}
    record = model.model_validate(body)
    assert record.model_extra == {"futureField": {"added": "later"}}
    assert record.model_dump(mode="json", by_alias=True)["futureField"] == {"added": "later"}


@pytest.mark.parametrize(("model", "sample", "key"), [case[:3] for case in RESPONSES], ids=RESPONSE_IDS)
def test_response_rejects_null_in_non_nullable_field(
    model: type[ServiceModel], sample: Callable[[], dict[str, Any]], key: str
) -> None:
    with pytest.raises(ValidationError, match=key):
        model.model_validate({**sample(), key: None})


NULLABLE = [(model, sample, key) for model, sample, _, key in RESPONSES if key is not None]


@pytest.mark.parametrize(("model", "sample", "key"), NULLABLE, ids=[case[0].__name__ for case in NULLABLE])
def test_response_accepts_null_in_nullable_field(
    model: type[ServiceModel], sample: Callable[[], dict[str, Any]], key: str
) -> None:
    record = model.model_validate({**sample(), key: None})
    assert record.model_dump(by_alias=True)[key] is None


USER_KEYS = [field.alias or name for name, field in User.model_fields.items()]
OMITTABLE = {"status": None, "dateFormat": "MM/DD/YYYY", "isImpersonated": False}


@pytest.mark.parametrize("key", USER_KEYS)
def test_user_field_may_be_omitted_only_if_spec_says_so(key: str) -> None:
    body = samples.user()
    del body[key]
    if key in OMITTABLE:
        assert User.model_validate(body).model_dump(by_alias=True)[key] == OMITTABLE[key]
    else:
        with pytest.raises(ValidationError, match="Field required"):
            User.model_validate(body)


def test_user_status_may_be_omitted_but_not_null() -> None:
    with pytest.raises(ValidationError, match="status"):
        User.model_validate({**samples.user(), "status": None})


def test_user_nested_null_checks() -> None:
    user = samples.user()
    user["manager"]["primaryOrganization"] = None
    user["manager"]["managerName"] = None
    assert User.model_validate(user).manager.primary_organization is None
    user["manager"]["createdOn"] = None
    with pytest.raises(ValidationError, match=r"manager\.createdOn"):
        User.model_validate(user)


def test_response_enums_are_checked() -> None:
    with pytest.raises(ValidationError, match="status"):
        Decision.model_validate({**samples.decision(), "status": "LIVE"})
    with pytest.raises(ValidationError, match="disableOption"):
        Group.model_validate({**samples.group(), "disableOption": "KEEP"})


def test_group_status_is_optional() -> None:
    body = samples.group()
    del body["status"]
    assert Group.model_validate(body).status is None


def test_decision_optional_extras_are_read() -> None:
    body = {**samples.decision(), "previousStatus": "DRAFT", "authorityLimitSortPrecedence": 2.5}
    decision = Decision.model_validate(body)
    assert (decision.previous_status, decision.authority_limit_sort_precedence) == ("DRAFT", 2.5)
    assert decision.model_extra == {}


def test_decision_projection_has_the_decision_fields_all_optional() -> None:
    assert DecisionProjection.model_fields.keys() == Decision.model_fields.keys()
    assert all(not field.is_required() for field in DecisionProjection.model_fields.values())
    projected = DecisionProjection.model_validate(
        {"decisionId": "d1", "name": "Approve travel", "delegations": 2}
    )
    assert projected.model_dump(by_alias=True, exclude_unset=True) == {
        "decisionId": "d1",
        "name": "Approve travel",
        "delegations": 2,
    }
    full = DecisionProjection.model_validate(samples.decision())
    assert full.model_dump(mode="json", by_alias=True, exclude_unset=True) == samples.decision()


def test_permission_keeps_snake_case_wire_key() -> None:
    permission = Permission.model_validate({"relationship_key": "can_view", "allowed": False})
    assert permission.model_dump(by_alias=True) == {"relationship_key": "can_view", "allowed": False}


def test_response_timestamps_are_utc() -> None:
    position = UserPosition.model_validate(
        {**samples.user_position(), "createdOn": "2025-03-14T10:26:53.5+01:00"}
    )
    assert position.created_on == datetime(2025, 3, 14, 9, 26, 53, 500000, tzinfo=UTC)
    assert position.model_dump(mode="json", by_alias=True)["createdOn"] == "2025-03-14T09:26:53.500Z"


def test_records_in_envelope_and_page() -> None:
    body = {
        "statusCode": 200,
        "timestamp": samples.NOW,
        "message": "Success",
        "data": {"page": 1, "limit": 10, "total": 1, "data": [samples.decision()]},
    }
    envelope = Envelope[Page[Decision]].model_validate(body)
    assert envelope.data.data[0].decision_display_id == "27"


def test_a_timestamp_always_has_a_four_digit_year() -> None:
    early = datetime(202, 5, 1, 6, 7, 8, 9000, tzinfo=UTC)
    assert format_timestamp(early) == "0202-05-01T06:07:08.009Z"
    body = UpdateUserEntities(tenant_id=TENANT, start_date=early).to_wire()
    assert UpdateUserEntities.model_validate(body).start_date == early


def test_a_timestamp_out_of_range_in_utc_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="out of range once converted to UTC"):
        DecisionQuery(updated_at_end="0001-01-01T00:00:00+00:01")


@pytest.mark.parametrize("name", ["Ann\nMarie", "Tab\there", "Bell\x07", "Del\x7f"])
def test_names_with_control_characters_or_line_breaks_are_refused(name: str) -> None:
    with pytest.raises(ValidationError, match="control characters and line breaks"):
        UpdateUserEntities(tenant_id=TENANT, first_name=name)
    with pytest.raises(ValidationError, match="control characters and line breaks"):
        UpdateGroup(group_name=name)


class _Sent(ServiceModel):
    id: str


@pytest.mark.parametrize(
    "duplicate",
    [
        copy.copy,
        copy.deepcopy,
        lambda record: record.model_copy(update={"id": "b"}),
        lambda record: pickle.loads(pickle.dumps(record)),  # noqa: S301 - our own bytes, just written
    ],
    ids=["copy", "deepcopy", "model_copy", "pickle"],
)
def test_a_copy_of_a_record_keeps_the_text_the_service_sent(duplicate: Callable[[_Sent], _Sent]) -> None:
    # the text is held outside pydantic's own attributes (issue 31): a copy that lost it would store a
    # re-serialisation (1500.0) as raw
    sent = '{"id": "a", "n": 1500.00}'
    record = _Sent.model_validate_json(sent)
    assert record.raw_json() == '{"id":"a","n":1500.0}'
    record.keep_received(sent)
    assert duplicate(record).raw_json() == sent


CASED_UUIDS = st.builds(
    lambda value, upper: "".join(c.upper() if u else c for c, u in zip(str(value), upper, strict=False)),
    st.uuids(),
    st.lists(st.booleans(), min_size=36, max_size=36),
)


@given(st.text(max_size=40) | CASED_UUIDS | CASED_UUIDS.map(lambda value: value + "\n"))
def test_an_id_is_keyed_in_lower_case_when_it_is_a_uuid_and_exactly_as_sent_otherwise(value: str) -> None:
    keyed = canonical_id(value)
    assert keyed == (value.lower() if is_uuid(value) else value)
    assert canonical_id(keyed) == keyed
