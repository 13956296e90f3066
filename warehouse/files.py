"""Who may read what authority-sync writes. The warehouse, the copy for readers, staging, Parquet, HR
plans and error reports hold personal data (names, emails, who reports to whom), so whatever this process
creates is its owner's alone, 0600 files in 0700 folders, whatever the umask it was started with. The copy
for readers (and its Parquet) can be shared with one group, ``ADM_READERS_GROUP``: 0640 and 0750.
"""

from __future__ import annotations

import glob
import grp
import os
import stat
from pathlib import Path

PRIVATE_UMASK = 0o077
"""Owner only: files 0600, folders 0700."""
SHARED_FILE, SHARED_FOLDER = 0o640, 0o750


def keep_private() -> None:
    """Make every file and folder this process creates from now on private to its owner (a process-wide
    umask: DuckDB creates its own files, its write-ahead log among them, and only the umask reaches it)."""
    os.umask(PRIVATE_UMASK)


def tighten(*paths: Path) -> None:
    """Make private what an earlier release (or a looser umask) left readable: each path this user owns,
    with everything in it, loses every permission beyond 0600 (files) or 0700 (folders). Missing paths,
    symbolic links and other users' files are left alone; nothing is ever loosened."""
    for path in paths:
        walk = path.rglob("*") if path.is_dir() and not path.is_symlink() else []
        for item in [path, *walk]:
            try:
                found = item.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(found.st_mode) or found.st_uid != os.getuid():
                continue
            mode = stat.S_IMODE(found.st_mode)
            allowed = 0o700 if stat.S_ISDIR(found.st_mode) else 0o600
            if mode & ~allowed:
                item.chmod(mode & allowed)


def warehouse_files(warehouse: Path) -> list[Path]:
    """The files kept beside a warehouse: itself, its write-ahead log, the copy an upgrade kept, and its
    hidden lock and temporary files."""
    name = glob.escape(warehouse.name)
    return [warehouse, *warehouse.parent.glob(f"{name}.*"), *warehouse.parent.glob(f".{name}.*")]


def group_id(name: str) -> int:
    """The id of the group ``name``; raises ValueError in one line when the system has no such group."""
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise ValueError(f"no group named {name!r} on this machine") from None


def share_with_group(path: Path, group: str) -> None:
    """Let ``group`` read ``path``: a file 0640, a folder 0750 with everything in it."""
    gid = group_id(group)
    for item in [path, *(path.rglob("*") if path.is_dir() else [])]:
        os.chown(item, -1, gid)
        item.chmod(SHARED_FOLDER if item.is_dir() else SHARED_FILE)


def default_publish_path(warehouse: Path) -> Path:
    """The copy readers open when ``ADM_PUBLISH_PATH`` is unset: ``<stem>.analytics.duckdb`` beside it."""
    return warehouse.with_name(f"{warehouse.stem}.analytics.duckdb")
