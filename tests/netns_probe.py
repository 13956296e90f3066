"""Run inside a network namespace by tests/test_client_network.py (no tests here): a recording proxy on an
address that exists only in that namespace, ``HTTP_PROXY``/``ALL_PROXY`` naming it, and clients of a
plain-http loopback emulator, one with a token and one with an access key. Prints, as one JSON line, what
the proxy received and how many users the clients read."""

from __future__ import annotations

import json
import os
import sys

import httpx

from emulator.scale import DEMO_ACCESS_KEY
from emulator.server import EmulatorServer
from emulator.service import EmulatorOptions
from tests.conftest import SMALL
from tests.network_support import RecordingProxy
from tests.test_client_support import make_client

PROXY_VARIABLES = ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def main(host: str) -> None:
    """Read the users twice through clients whose environment names the proxy on ``host``."""
    with RecordingProxy(host) as proxy, EmulatorServer(EmulatorOptions(scale=SMALL)) as server:
        os.environ.update(dict.fromkeys(PROXY_VARIABLES, proxy.url))
        read = []
        for credential in ({}, {"token": None, "access_key": DEMO_ACCESS_KEY}):
            with make_client(server, **credential) as client:
                read.append(sum(1 for _ in client.iter_users()))
        heads = [head.decode(errors="replace") for head in proxy.heads]
        # The listener is live: a client told to use it does reach it (it refuses plain requests: 502).
        answer = httpx.get(server.base_url, proxy=proxy.url).status_code
    seen = {"proxy": proxy.url, "users read": read, "proxy received": heads, "proxy answers": answer}
    print(json.dumps(seen))


if __name__ == "__main__":
    main(sys.argv[1])
