"""The one TLS context of a process: which certificate authorities the client trusts.

Trusted, together: the operating system's trust store (through `truststore`, as pip does: a corporate CA the
machine's administrator installed is trusted without any setting of ours), the public CAs of `certifi` (so a
host whose store is empty still reaches the service), and the PEM file ``ca_bundle`` names
(``ADM_CA_BUNDLE``), which adds an organisation's CA, e.g. the one a re-signing proxy presents. OpenSSL's own
``SSL_CERT_FILE``/``SSL_CERT_DIR`` replace the system store's file/folder only; the two others stay trusted.

Building a context reads a few hundred certificates (~40 ms): it is built once per bundle and shared.
Certificates are always verified; there is no switch to turn that off.
"""

from __future__ import annotations

import ssl
from functools import cache
from pathlib import Path
from typing import Annotated

import certifi
import truststore
from pydantic import AfterValidator


@cache
def tls_context(ca_bundle: Path | None = None) -> ssl.SSLContext:
    """The shared client context trusting the OS store, the public CAs and ``ca_bundle`` (if given)."""
    context = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=certifi.where())
    if ca_bundle is not None:
        context.load_verify_locations(cafile=str(ca_bundle))
    return context


def ca_bundle_problem(path: Path) -> str | None:
    """Why ``path`` cannot serve as a CA bundle (missing, unreadable, not PEM certificates), or None."""
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=str(path))
    except FileNotFoundError:
        return f"{path} does not exist"
    except OSError as error:  # ssl.SSLError is an OSError: a file without a PEM certificate
        return f"{path} holds no PEM certificate that can be read ({error.strerror or error})"
    return None


def _readable_bundle(path: Path) -> Path:
    problem = ca_bundle_problem(path)
    if problem:
        raise ValueError(problem)
    return path


CaBundle = Annotated[Path, AfterValidator(_readable_bundle)]
"""A setting naming a CA bundle: refused unless it holds PEM certificates."""
