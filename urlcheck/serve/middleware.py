"""The server's doors, one ASGI middleware per concern, outermost first (app.py stacks them):

* :class:`SecurityHeaders`: the CSP, ``nosniff`` and friends on every answer, errors included;
* :class:`TrustedHosts`: a Host header outside the allowlist is a 400, which defeats DNS
  rebinding (a page on another name that resolves to this server can't talk to it);
* :class:`TokenAuth`: beyond loopback a token is needed: ``Authorization: Bearer`` for the API,
  or the cookie a first visit with ``?token=`` exchanges it for (HttpOnly, SameSite=Strict);
  compared in constant time;
* :class:`CsrfGuard`: a POST needs a same-origin ``Origin`` and the CSRF token of its session
  cookie (double submit, the token being an HMAC of the session id), unless it carries a
  Bearer token, which a browser never sends on its own.

GETs change nothing (routes.py), so only unsafe methods are guarded against forgery.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; "
    "img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
AUTH_COOKIE = "urlcheck_auth"
SESSION_COOKIE = "urlcheck_session"
CSRF_HEADER = "x-csrf-token"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PUBLIC_PREFIX = "/static/"  # the page's own script and style, the same for everyone
_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


def digest(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def same(a: str, b: str) -> bool:
    """Constant-time string comparison."""
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def cookies(scope: Scope) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(Headers(scope=scope).get("cookie", ""))
    except Exception:  # noqa: BLE001 (a malformed Cookie header is no cookie)
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


def cookie_header(name: str, value: str, *, secure: bool) -> str:
    parts = [f"{name}={value}", "Path=/", "SameSite=Strict", "HttpOnly"]
    if secure:
        parts.append("Secure")
    return "; ".join(parts)


async def _answer(
    send: Send,
    status: int,
    message: str,
    scope: Scope,
    headers: Iterable[tuple[str, str]] = (),
) -> None:
    """A short error: JSON for the API, plain text for a page."""
    if scope["path"].startswith("/api/"):
        body = json.dumps({"error": message}).encode("utf-8")
        kind = "application/json"
    else:
        body = message.encode("utf-8")
        kind = "text/plain; charset=utf-8"
    raw = [(b"content-type", kind.encode()), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    if name not in headers:  # a download may set a stricter CSP of its own
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, with_headers)


def split_host(value: str) -> str:
    """The host of a Host header or an Origin's authority, without the port, lower-case."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else ""
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class TrustedHosts:
    def __init__(self, app: ASGIApp, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(name.strip("[]").lower() for name in allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = split_host(Headers(scope=scope).get("host", ""))
            if host not in self.allowed:
                await _answer(send, 400, "invalid Host header", scope)
                return
        await self.app(scope, receive, send)


class TokenAuth:
    """``token`` None: nothing to check (loopback only, as config.py decides)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token
        self.cookie_value = digest(token.encode("utf-8"), "auth-cookie") if token else ""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})["bearer"] = False
        if self.token is None or scope["path"].startswith(PUBLIC_PREFIX):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        scheme, _, credential = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and same(credential.strip(), self.token):
            scope["state"]["bearer"] = True
            await self.app(scope, receive, send)
            return
        if same(cookies(scope).get(AUTH_COOKIE, ""), self.cookie_value):
            await self.app(scope, receive, send)
            return
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        offered = [value for name, value in query if name == "token"]
        if scope["method"] in SAFE_METHODS and offered and same(offered[0], self.token):
            # The token leaves the address bar (and history) at once: a cookie holds it now.
            rest = urlencode([(n, v) for n, v in query if n != "token"])
            location = scope["path"] + (f"?{rest}" if rest else "")
            secure = scope.get("scheme") == "https"
            await _answer(
                send,
                303,
                "signed in",
                scope,
                [
                    ("location", location),
                    ("set-cookie", cookie_header(AUTH_COOKIE, self.cookie_value, secure=secure)),
                ],
            )
            return
        await _answer(
            send, 403, "a token is needed: open the address the server printed at start", scope
        )


class CsrfGuard:
    def __init__(self, app: ASGIApp, key: bytes) -> None:
        self.app = app
        self.key = key

    def token_for(self, session: str) -> str:
        return digest(self.key, f"csrf:{session}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = scope.setdefault("state", {})
        session = cookies(scope).get(SESSION_COOKIE, "")
        new_session = len(session) != 43  # token_urlsafe(32)
        if new_session:
            session = secrets.token_urlsafe(32)
        state["csrf_token"] = self.token_for(session)
        if scope["method"] not in SAFE_METHODS and not state.get("bearer"):
            headers = Headers(scope=scope)
            why = None
            origin = headers.get("origin", "")
            if not origin or origin == "null":
                why = "a request without an Origin header"
            elif split_netloc(origin) != headers.get("host", "").strip().lower():
                why = "a request from another origin"
            elif new_session or not same(headers.get(CSRF_HEADER, ""), state["csrf_token"]):
                why = "a request without this page's CSRF token (reload the page)"
            if why is not None:
                await _answer(send, 403, f"refused: {why}", scope)
                return

        async def with_session(message: Message) -> None:
            if message["type"] == "http.response.start" and new_session:
                secure = scope.get("scheme") == "https"
                MutableHeaders(scope=message).append(
                    "set-cookie", cookie_header(SESSION_COOKIE, session, secure=secure)
                )
            await send(message)

        await self.app(scope, receive, with_session)


def split_netloc(origin: str) -> str:
    """``https://host:port`` -> ``host:port`` (the scheme is left out: behind a TLS proxy the
    browser's is https and ours http; the Host header, checked against the allowlist, is
    what the browser named)."""
    return urlsplit(origin.strip().lower()).netloc
