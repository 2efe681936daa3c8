"""Every request meta key urlcheck sets or reads: one home, so no component spells one itself.

Public keys (``urlcheck_*``) carry a row along its chain and may be read by user components;
private ones (``_urlcheck_*``) are bookkeeping of one component.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The row a request belongs to (a urlcheck.check.result.RowTask), the hops so far, retries spent.
TASK = "urlcheck_task"
CHAIN = "urlcheck_chain"
RETRIES = "urlcheck_retries"
# The last Retry-After the server sent, in seconds (urlcheck.middlewares.backoff).
RETRY_AFTER = "urlcheck_retry_after"
# An earlier hop of this request's chain was answered from a public address, so loopback,
# private and reserved space are out of bounds for it (urlcheck.check.addressguard).
AFTER_PUBLIC = "urlcheck_after_public"
# What the guard judges a request by besides its URL: a request urlcheck sends because of
# another (its robots.txt, a proxy probe of its URL) carries these of the request that caused it.
GUARD_CONTEXT = (AFTER_PUBLIC,)
# host:port of the proxy a request went through, for the result (never credentials).
PROXY = "urlcheck_proxy"
# "captcha:<signature>" or "block:<signature>" when the hop met a bot wall: every proxy tried
# met a captcha or block (urlcheck.middlewares.proxy), or the direct request did
# (urlcheck.middlewares.walls).
BLOCKED = "urlcheck_blocked"
# A probe: send through this proxy id, without a lease (urlcheck.extensions.proxyprobes).
PROBE_PROXY = "urlcheck_probe_proxy"
PROBE_STARTED = "_urlcheck_probe_started"
PROBE_CONTROL = "_urlcheck_probe_control"
# The proxy pool lease held by a request in flight (urlcheck.middlewares.proxy).
LEASE = "_urlcheck_lease"
# Body bytes received so far (urlcheck.middlewares.bodycap).
BODY_BYTES = "_urlcheck_body_bytes"


def guard_context(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of GUARD_CONTEXT set in ``meta``: for the meta of a request it causes."""
    return {key: meta[key] for key in GUARD_CONTEXT if meta.get(key)}
