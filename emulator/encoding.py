"""JSON bytes of what the emulator serves."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(data: Any) -> bytes:
    """JSON bytes of ``data``: orjson, or the standard library for what orjson refuses (an integer beyond
    64 bits that a client put in a free-form field such as a user's ``customAttributes``)."""
    try:
        return orjson.dumps(data)
    except TypeError:
        return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
