"""The HR drop folders: where HR's system (or a person) leaves exports for unattended runs, and what is
taken when.

**Folders.** ``ADM_HR_DROP_DIR`` is a drop folder, and so is each folder directly in it that holds an
``hr-folder.toml`` (one per tenant, or per HR system): its settings name the tenant, the mapping and the
file options (encoding, delimiter, date formats) of the files dropped there (`FolderSettings`).

**Files.** ``*.csv``, ``*.tsv`` and ``*.xlsx`` in any case (``USERS.CSV``); hidden files, Excel's lock files
(``~$…``) and files being written under a temporary name (``*.part``, ``*.tmp``) are not. A file is
taken once it is complete: it ends with a line break (a CSV, in a UTF-16 or UTF-32 file too; a
workbook: its zip directory, written last, is readable) and has kept its size and modification time over
two sensor ticks. A row cut short by a writer that paused is thereby never planned (a writer pausing
between rows leaves a shorter file of whole rows, which plans nothing wrong: rows absent from a file
change nothing). Writers that must be certain use one of two conventions: write under a temporary or
hidden name and rename (atomic), or set ``done_marker = true`` and create ``<file>.done`` once the file
is written.

**After its run.** A file whose run succeeded moves to ``processed/``, one whose run failed (refused,
rejected rows, blocked, incomplete) to ``failed/``, beside its error report; each under a name that starts
with the run's time, so nothing is overwritten.
"""

from __future__ import annotations

import tomllib
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field
from pydantic import ValidationError as PydanticValidationError

from models.errors import AuthoritySyncError

SETTINGS_FILE = "hr-folder.toml"
PROCESSED = "processed"
FAILED = "failed"
DONE_SUFFIX = ".done"
UPLOAD_SUFFIXES = frozenset({".csv", ".tsv", ".xlsx"})
"""File name endings taken from a drop folder, compared ignoring case."""
TEMPORARY_SUFFIXES = frozenset({".part", ".tmp", ".partial", ".crdownload"})
ROOT = "."
"""How the drop folder ``ADM_HR_DROP_DIR`` itself is named among the folders."""


class FolderSettingsError(AuthoritySyncError, ValueError):
    """A folder's ``hr-folder.toml`` cannot be used; the message names it and says why."""


class FolderSettings(BaseModel):
    """A drop folder's ``hr-folder.toml``: every key is optional."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tenant_id: str | None = None
    """The tenant its files are for; default ``ADM_TENANT_ID`` (the first configured tenant)."""
    mapping: str | None = None
    """The column mapping, relative to the folder; default the shipped one."""
    encoding: str | None = None
    delimiter: str | None = None
    date_formats: list[str] = Field(default_factory=list)
    """Override the mapping's ``[csv]`` options for this folder's files."""
    trust_date_order: bool | None = None
    """Override the mapping's ``[csv] trust_date_order`` (accept dates that read both ways)."""
    done_marker: bool = False
    """Take a file only once ``<file>.done`` exists beside it."""


@dataclass(frozen=True)
class DropFolder:
    """One drop folder: its key (``.`` for the root, else its name), path and settings, or why its
    settings cannot be used (``error``: its files wait, the other folders go on)."""

    key: str
    path: Path
    settings: FolderSettings
    error: str | None = None

    def mapping_path(self) -> Path | None:
        """The folder's mapping file, if it names one."""
        return self.path / self.settings.mapping if self.settings.mapping else None


def drop_folders(root: Path) -> list[DropFolder]:
    """The root and each folder directly in it that holds an ``hr-folder.toml``, root first; a folder
    whose settings cannot be used comes with its error (and default settings, never used)."""
    found = [_folder(ROOT, root)]
    for child in sorted(root.iterdir()):
        if child.is_dir() and (child / SETTINGS_FILE).is_file():
            found.append(_folder(child.name, child))
    return found


def _folder(key: str, path: Path) -> DropFolder:
    try:
        return DropFolder(key, path, folder_settings(path))
    except FolderSettingsError as error:
        return DropFolder(key, path, FolderSettings(), str(error))


def folder_settings(folder: Path) -> FolderSettings:
    """The settings of a folder (defaults when it has no ``hr-folder.toml``)."""
    path = folder / SETTINGS_FILE
    if not path.is_file():
        return FolderSettings()
    try:
        with path.open("rb") as handle:
            return FolderSettings.model_validate(tomllib.load(handle))
    except PydanticValidationError as error:
        wrong = "; ".join(
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors(include_url=False, include_input=False)
        )
        raise FolderSettingsError(f"{path}: {wrong}") from None
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise FolderSettingsError(f"{path}: {str(error).splitlines()[0]}") from None


def uploads(folder: DropFolder) -> list[Path]:
    """The files of a folder that are HR uploads (see the module docstring), by name."""
    return [path for path in sorted(folder.path.iterdir()) if path.is_file() and _upload_name(path.name)]


def _upload_name(name: str) -> bool:
    lowered = name.casefold()
    if lowered.startswith((".", "~$")) or Path(lowered).suffix in TEMPORARY_SUFFIXES:
        return False
    return Path(lowered).suffix in UPLOAD_SUFFIXES


def signature(path: Path) -> list[int]:
    """What must stay the same over two ticks: size and modification time."""
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns]


def complete(path: Path, settings: FolderSettings) -> bool:
    """Whether a file is written to its end (see the module docstring); stability is checked apart."""
    if settings.done_marker:
        return _marker(path).is_file()
    if path.suffix.casefold() == ".xlsx":
        return zipfile.is_zipfile(path)
    with path.open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(size - 4, 0))
        # UTF-16 and UTF-32 write a line break with NUL bytes around it (``\n\0`` little-endian).
        return handle.read().strip(b"\0")[-1:] in (b"\n", b"\r")


def _marker(path: Path) -> Path:
    return path.with_name(path.name + DONE_SUFFIX)


def file_away(path: Path, succeeded: bool, when: datetime) -> Path:
    """Move a file whose run ended (and its done marker) to ``processed/`` or ``failed/``, under a name
    that starts with ``when`` (the run's start); returns where it went."""
    target = path.parent / (PROCESSED if succeeded else FAILED) / f"{when:%Y%m%dT%H%M%S}-{path.name}"
    target.parent.mkdir(exist_ok=True)
    path.replace(target)
    marker = _marker(path)
    if marker.is_file():
        marker.replace(target.with_name(target.name + DONE_SUFFIX))
    return target
