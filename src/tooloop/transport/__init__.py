"""The transport every provider stands on: HTTP, server-sent events, JSON POST, one retry policy.

Below the models: it imports nothing of tooloop but the leaves. :mod:`.http` (connection pool,
request and response, body framing, TLS), :mod:`.sse` (the one SSE decoder), :mod:`.client`
(JSON POST and SSE streams, the transport's errors), :mod:`.retry` (the one retry policy),
:mod:`.perloop` (one client per event loop). Nothing is imported here, so ``import tooloop``
(which needs only :mod:`.perloop`) loads no TLS or compression module.
"""
