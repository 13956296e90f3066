"""The column-mapping file (TOML): which HR column feeds which field, how rows match service records,
how HR status words translate, CSV conventions, warehouse freshness and safety thresholds.

The shipped default is ``pipelines/hr/samples/mapping.toml`` (documented line by line). Tables map
*field = "HR column"*, so one HR column may feed two fields (an org unit's name is both its ``group_name``
and its ``display_name``). Unknown fields, kinds or statuses are refused when the file is loaded, so a typo
cannot silently drop a column from the sync.
"""

from __future__ import annotations

import codecs
import tomllib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from models.errors import AuthoritySyncError
from models.groups import DisableOption, GroupStatus
from models.hr.fields import GROUP_FIELDS, USER_DATE_FIELDS, USER_FIELDS, EntityKind
from models.hr.thresholds import Thresholds
from models.users import UserStatus
from pipelines.hr.dates import both_orders

SAMPLES = Path(__file__).with_name("samples")
DEFAULT_MAPPING = SAMPLES / "mapping.toml"
TENANT_FIELD = "tenant"
"""A mappable field of both kinds: the tenant a row belongs to, checked, never written."""
EFFECTIVE_FIELD = "effective_date"
"""A mappable field of both kinds: the day the row's changes take effect (blank, past or today: now)."""
AS_OF_FIELD = "as_of"
"""A mappable field of both kinds: when the row was exported (compared with the service's last change)."""
OPTIONAL_FIELDS = frozenset({TENANT_FIELD, EFFECTIVE_FIELD, AS_OF_FIELD})
"""Mapped fields whose column a file may lack (every other mapped column must be in the header)."""
DATE_FIELDS = frozenset({*USER_DATE_FIELDS, EFFECTIVE_FIELD, AS_OF_FIELD})
"""Fields read as dates, each by its column's date formats."""
DEFAULT_DATE_FORMATS = ("%Y-%m-%d",)


class MappingError(AuthoritySyncError, ValueError):
    """The mapping file cannot be used; the message says where and why."""


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EntityMapping(_Table):
    """How one HR file (users or groups) maps to service fields."""

    kind: ClassVar[EntityKind]
    known_fields: ClassVar[tuple[str, ...]]
    key_fields: ClassVar[tuple[str, ...]]
    unique_fields: ClassVar[tuple[str, ...]]
    statuses: ClassVar[frozenset[str]]

    columns: dict[str, str]
    match_keys: tuple[str, ...]
    status_values: dict[str, str] = Field(default_factory=dict)
    date_formats: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    """Date field -> the formats its column is read with, where not ``[csv] date_formats``."""

    @model_validator(mode="after")
    def _known(self) -> EntityMapping:
        unknown = set(self.columns) - {*self.known_fields, *OPTIONAL_FIELDS}
        if unknown:
            raise ValueError(f"unknown {self.kind} fields {sorted(unknown)}; known: {self.known_fields}")
        not_dates = sorted(set(self.date_formats) - DATE_FIELDS)
        if not_dates:
            raise ValueError(f"date_formats names fields that are no dates: {not_dates}")
        for formats in self.date_formats.values():
            _one_order(formats)
        bad_keys = [key for key in self.match_keys if key not in self.key_fields or key not in self.columns]
        if not self.match_keys or bad_keys:
            raise ValueError(f"match_keys must be mapped fields among {self.key_fields}, got {bad_keys}")
        bad_statuses = set(self.status_values.values()) - self.statuses
        if bad_statuses:
            raise ValueError(f"status_values map to unknown statuses {sorted(bad_statuses)}")
        return self

    def column(self, field: str) -> str | None:
        """The HR column of ``field``, or None when the field is not mapped."""
        return self.columns.get(field)

    @property
    def key_column(self) -> str:
        """The column of the first match key: it identifies a row in messages and marks the file's kind."""
        return self.columns[self.match_keys[0]]

    def status(self, value: str) -> str | None:
        """The service status of an HR status word (exact, then ignoring case); None for a word
        ``status_values`` does not list: the mapping decides every word (a service status spelled by HR,
        ``deleted``, is no exception)."""
        if value in self.status_values:
            return self.status_values[value]
        folded = {word.casefold(): status for word, status in self.status_values.items()}
        return folded.get(value.casefold())

    def formats(self, field: str, options: CsvOptions) -> tuple[str, ...]:
        """The date formats of a date field's column."""
        return self.date_formats.get(field, options.date_formats)

    def date_columns(self, options: CsvOptions) -> dict[str, tuple[str, ...]]:
        """HR column -> date formats, of every mapped date field."""
        dated = {name: column for name, column in self.columns.items() if name in DATE_FIELDS}
        return {column: self.formats(name, options) for name, column in dated.items()}


class UserMapping(EntityMapping):
    """The users file: matched by employee id, then email, by default."""

    kind: ClassVar[EntityKind] = "user"
    known_fields: ClassVar[tuple[str, ...]] = USER_FIELDS
    key_fields: ClassVar[tuple[str, ...]] = ("employee_id", "email")
    unique_fields: ClassVar[tuple[str, ...]] = ("employee_id", "email")
    statuses: ClassVar[frozenset[str]] = frozenset(UserStatus)


class GroupMapping(EntityMapping):
    """The org-units file: matched by external id, then name, by default."""

    kind: ClassVar[EntityKind] = "group"
    known_fields: ClassVar[tuple[str, ...]] = GROUP_FIELDS
    key_fields: ClassVar[tuple[str, ...]] = ("external_id", "group_name")
    unique_fields: ClassVar[tuple[str, ...]] = ("external_id",)
    """Names may repeat (two regions can each have a Finance department)."""
    statuses: ClassVar[frozenset[str]] = frozenset(GroupStatus)

    disable_option: DisableOption = DisableOption.KEEP_ASSOCIATIONS
    """Sent with a group deactivation: what happens to the group's members and decisions."""


class CsvOptions(_Table):
    """Conventions of the HR export."""

    list_separator: str = Field(";", min_length=1, max_length=1)
    """Separates several positions, groups or roles in one cell."""
    date_formats: tuple[str, ...] = Field(
        DEFAULT_DATE_FORMATS, validation_alias=AliasChoices("date_formats", "date_format"), min_length=1
    )
    """``strptime`` formats of the date columns, the first that fits wins (``date_format``, one format, is
    read too). A time part after the date (``2026-03-31 00:00:00``) is accepted and ignored: HR systems
    export dates as midnight timestamps. Excel serial numbers are read as dates too."""
    trust_date_order: bool = False
    """Accept a file whose day/month dates all read either way (see `pipelines.hr.dates`)."""
    encoding: str = "utf-8"
    """The file's encoding, a Python codec name: ``utf-8`` (a BOM is optional), ``cp1252``, ``latin-1``."""
    delimiter: str | None = None
    """Separates cells: one character, or ``tab``; None detects comma, semicolon or tab from the header."""

    @field_validator("date_formats", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("date_formats")
    @classmethod
    def _one_order(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _one_order(value)

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        try:
            codecs.lookup(value)
        except LookupError:
            raise ValueError(f"unknown encoding {value!r}; e.g. utf-8, cp1252, latin-1") from None
        return value

    @field_validator("delimiter")
    @classmethod
    def _one_character(cls, value: str | None) -> str | None:
        if value is not None and value.casefold() == "tab":
            return "\t"
        if value is not None and len(value) != 1:
            raise ValueError(f"a delimiter is one character or 'tab', got {value!r}")
        return value


class PlanOptions(_Table):
    """Planning rules."""

    max_warehouse_age_hours: float = Field(26.0, gt=0)
    """A plan is refused when the warehouse's last extract finished longer ago than this."""
    max_export_age_hours: float = Field(72.0, gt=0)
    """An HR file exported longer ago than this is refused unless allowed (``--allow-old-export``)."""


class Mapping(_Table):
    """A whole mapping file."""

    csv: CsvOptions = Field(default_factory=CsvOptions)
    users: UserMapping
    groups: GroupMapping
    plan: PlanOptions = Field(default_factory=PlanOptions)
    thresholds: Thresholds = Field(default_factory=Thresholds)

    @property
    def max_warehouse_age(self) -> timedelta:
        """How old the warehouse may be when a plan is made."""
        return timedelta(hours=self.plan.max_warehouse_age_hours)

    @property
    def max_export_age(self) -> timedelta:
        """How old an HR export may be when it is planned (unless allowed)."""
        return timedelta(hours=self.plan.max_export_age_hours)

    def for_kind(self, kind: EntityKind) -> UserMapping | GroupMapping:
        """The mapping of one entity kind."""
        return self.users if kind == "user" else self.groups


def _one_order(formats: tuple[str, ...]) -> tuple[str, ...]:
    """``formats``, unless they hold one pattern in both day/month orders (01/02 would read either way)."""
    twice = both_orders(formats)
    if twice:
        raise ValueError(f"{twice} read day and month in both orders: list one of them")
    return formats


def with_file_options(
    mapping: Mapping,
    encoding: str | None,
    delimiter: str | None,
    date_formats: Sequence[str] | None = None,
    trust_date_order: bool | None = None,
) -> Mapping:
    """``mapping`` with the file's encoding, delimiter, date formats and trust in their day/month order
    set where given (command-line options and a drop folder's settings win over the mapping file: one odd
    export should not need a mapping of its own)."""
    pairs = (("encoding", encoding), ("delimiter", delimiter), ("date_formats", date_formats))
    given: dict[str, object] = {name: value for name, value in pairs if value}
    if trust_date_order is not None:
        given["trust_date_order"] = trust_date_order
    if not given:
        return mapping
    try:
        options = CsvOptions.model_validate(mapping.csv.model_dump() | given)
    except PydanticValidationError as error:
        raise MappingError(_first_error(error)) from None
    return mapping.model_copy(update={"csv": options})


def load_mapping(path: Path | None = None) -> Mapping:
    """Read a mapping file (the shipped default when ``path`` is None)."""
    source = path or DEFAULT_MAPPING
    try:
        with source.open("rb") as handle:
            return Mapping.model_validate(tomllib.load(handle))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise MappingError(f"{source}: {error}") from error
    except PydanticValidationError as error:
        raise MappingError(f"{source}: {_first_error(error)}") from None


def _first_error(error: PydanticValidationError) -> str:
    """``where: what`` of the first error, without pydantic's "Value error, " prefix."""
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in first["loc"])
    return f"{where}: {first['msg'].removeprefix('Value error, ')}"
