"""The client on a corporate network: environment proxies never see a credential in clear, a certificate
that is not trusted fails once and says why, a corporate CA can be trusted, and failed tunnels behind a
proxy cannot use up the connection pool."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from pipelines.settings import SettingsError, load_settings
from resources.client import AdmClient
from resources.errors import TLSError
from resources.ratelimit import clear_buckets
from resources.settings import ClientSettings
from resources.transport import network_transport
from tests.conftest import DEMO_TENANT_ID, DEMO_TOKEN, SMALL
from tests.network_support import Certificates, RecordingProxy, TlsEmulator, make_certificates
from tests.test_client_support import FAST

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE_ADDRESS = "10.203.0.1"
"""Not on this machine: added to the loopback device of a network namespace the test creates."""
HTTPS_PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    """A corporate CA, a certificate it signed for 127.0.0.1 and a self-signed one."""
    return make_certificates(tmp_path_factory.mktemp("tls"))


def behind(monkeypatch: pytest.MonkeyPatch, proxy: RecordingProxy) -> RecordingProxy:
    """``proxy`` named by the https proxy variables of this test's environment."""
    for variable in HTTPS_PROXY_VARIABLES:
        monkeypatch.setenv(variable, proxy.url)
    for variable in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    return proxy


@pytest.fixture
def proxy(monkeypatch: pytest.MonkeyPatch) -> Iterator[RecordingProxy]:
    """A recording CONNECT proxy on loopback, named by ``HTTPS_PROXY``."""
    with RecordingProxy() as running:
        yield behind(monkeypatch, running)


def tls_client(base_url: str, **overrides: Any) -> AdmClient:
    """A fast client of the demo tenant at an https ``base_url``."""
    clear_buckets()
    values = {"base_url": base_url, "token": DEMO_TOKEN, "tenant_id": DEMO_TENANT_ID} | FAST | overrides
    return AdmClient(ClientSettings.model_validate(values))


def test_a_plain_http_address_is_never_reached_through_an_environment_proxy() -> None:
    # HTTP_PROXY and ALL_PROXY name a listener on an address that exists only inside the namespace (no
    # packet can leave the machine); the clients read a plain-http loopback emulator with a token and with
    # an access key. Before: every request, its bearer token and the key's exchange body, went to the proxy.
    command = (
        f"ip link set lo up && ip addr add {NAMESPACE_ADDRESS}/32 dev lo && "
        f"exec {sys.executable} -m tests.netns_probe {NAMESPACE_ADDRESS}"
    )
    done = subprocess.run(
        ["unshare", "--net", "--map-root-user", "sh", "-c", command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["proxy"].startswith(f"http://{NAMESPACE_ADDRESS}:")
    assert seen["users read"] == [SMALL.users, SMALL.users]
    assert seen["proxy received"] == []
    assert seen["proxy answers"] == 502  # the listener was there, reachable, and named by the variables


def test_an_untrusted_certificate_fails_once_naming_the_problem_and_the_cure(
    certificates: Certificates, proxy: RecordingProxy
) -> None:
    with TlsEmulator(certificates.self_signed) as served, tls_client(served.base_url) as client:
        started = time.monotonic()
        with pytest.raises(TLSError) as raised:
            client.current_user_positions()
        elapsed = time.monotonic() - started
        metrics = client.metrics
    message = str(raised.value)
    assert "certificate of 127.0.0.1 is not trusted: self-signed certificate" in message
    assert "ADM_CA_BUNDLE" in message
    assert proxy.tunnels == 1  # tried once: the same certificate would be refused again
    assert metrics.api_calls == 0  # nothing reached the service: no API call spent
    assert metrics.retries == 0
    assert elapsed < 5


def test_a_ca_bundle_trusts_a_corporate_ca(certificates: Certificates, proxy: RecordingProxy) -> None:
    with TlsEmulator(certificates.signed) as served:
        with tls_client(served.base_url) as untrusting, pytest.raises(TLSError):
            untrusting.current_user_positions()
        with tls_client(served.base_url, ca_bundle=certificates.ca) as trusting:
            positions = trusting.current_user_positions()
    assert positions
    assert proxy.tunnels == 2  # both through the proxy, which only ever saw encrypted bytes


def test_failed_tunnels_do_not_use_up_the_connection_pool(
    certificates: Certificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The proxy closes its first three tunnels right after CONNECT succeeds, as a proxy that times out
    # does. Before: each left its connection in a pool of one for good, and every later try waited for a
    # pool timeout.
    with (
        behind(monkeypatch, RecordingProxy(cut=3)) as proxy,
        TlsEmulator(certificates.signed) as served,
        tls_client(served.base_url, ca_bundle=certificates.ca, concurrency=1, pool_timeout_s=1.0) as client,
    ):
        positions = client.current_user_positions()
        retries = client.metrics.retries
    assert positions
    assert proxy.tunnels == 4
    assert retries == 3


def test_the_clients_of_a_process_share_one_tls_context_per_ca_bundle(certificates: Certificates) -> None:
    # Building a context reads a few hundred certificates (~40 ms); each client used to build its own.
    def context_of(ca_bundle: Path | None) -> object:
        values = {"base_url": "https://127.0.0.1:1", "token": DEMO_TOKEN, "tenant_id": DEMO_TENANT_ID}
        settings = ClientSettings.model_validate(values | {"ca_bundle": ca_bundle})
        transport = network_transport(settings, httpx.Limits())
        assert isinstance(transport, httpx.HTTPTransport)
        return transport._pool._ssl_context  # the context its connections use

    system = [context_of(None) for _ in range(3)]  # kept: a context freed could lend its id to the next
    corporate = [context_of(certificates.ca) for _ in range(3)]
    assert all(context is system[0] for context in system)
    assert all(context is corporate[0] for context in corporate)
    assert corporate[0] is not system[0]


def test_a_ca_bundle_that_is_not_pem_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    monkeypatch.setenv("ADM_CA_BUNDLE", str(tmp_path / "ca.pem"))
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value).startswith(f"ADM_CA_BUNDLE='{tmp_path / 'ca.pem'}' is not accepted")
    assert "no PEM certificate" in str(raised.value)
