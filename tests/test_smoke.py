"""The session emulator answers over loopback."""

import httpx

from tests.conftest import DEMO_TENANT_ID


def test_emulator_serves_a_page_of_decisions(http: httpx.Client) -> None:
    body = http.get("/decision/v1/decisions", params={"tenantId": DEMO_TENANT_ID}).json()
    assert body["statusCode"] == 200
    assert body["data"]["page"] == 1
    assert len(body["data"]["data"]) == 10
