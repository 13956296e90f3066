"""Access-key exchange, from public-reference.md: ``POST /auth/v1/tenants/access-key/exchange``.

The spec does not show token issuance (spec 5.4); the reference documents this endpoint. It is called
without an Authorization header and returns the JWT at ``data.token`` of the usual envelope.
"""

from __future__ import annotations

from pydantic import Field

from models.base import RequestModel, ServiceModel


class AccessKeyExchange(RequestModel):
    """Body of the access-key exchange: ``{"accessKey": "..."}`` (public-reference.md); kept out of reprs."""

    access_key: str = Field(min_length=1, repr=False)


class AccessToken(ServiceModel):
    """The data of the access-key exchange: the bearer token (public-reference.md); kept out of reprs."""

    token: str = Field(repr=False)
