"""The typed client of the Authority Delegation Management Service.

Its surface, each imported from its module: `resources.client.AdmClient` and its
`resources.settings.ClientSettings`; `resources.paging.PageStream` (what `AdmClient.iter_pages` returns);
`resources.metrics.MetricsSnapshot`; the exception tree rooted at `resources.errors.ServiceError`
(``APIConnectionError`` is named as openai-python names it: the builtin ``ConnectionError`` stays
unshadowed). The package itself loads none of them, so a module that needs only the settings' types or
the contract's modes does not pay for the HTTP client."""
