"""The web app: Starlette routes over :mod:`.pages`, the scope each request reads, and
errors shown as a message rather than a trace.

Who reads what is the server's decision, as for ``graphmem mcp``: on loopback the
server serves one scope (``--tenant``/``--scope``) and refuses requests whose Host is
not a loopback name (DNS rebinding); with a tokens file (required off loopback) each
bearer token maps to one scope (:mod:`graphmem.integrations.tokens`) and a request
without a known token reads nothing. A browser hands its token over once as
``?token=``: the server answers with an HttpOnly cookie and a redirect that drops it
from the address. The app has GET routes only: nothing it serves writes.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from ..errors import InputError, NotFoundError, ScopeError
from ..integrations.tokens import Caller, digest, load_tokens, loopback
from ..memory import Memory
from ..models import Scope
from ..server import listening
from . import pages

log = logging.getLogger("graphmem.ui")

COOKIE = "graphmem_ui_token"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
HEADERS = {  # the pages load only their own script and style; nothing embeds them
    "Content-Security-Policy": "default-src 'self'; style-src 'self'; img-src 'self' data:; "
                               "frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


class Gate:
    """The scope a request reads: the server's one scope, or its bearer token's."""

    def __init__(self, scope: Scope | None, tokens: Mapping[str, Caller] | None):
        if (scope is None) == (tokens is None):
            raise InputError("ui", "serve one fixed scope or a tokens file, not both")
        self._scope, self._tokens = scope, dict(tokens or {})

    @property
    def tokens(self) -> bool:
        return self._scope is None

    def known(self, token: str | None) -> Caller | None:
        return self._tokens.get(digest(token)) if token else None

    def scope(self, request: Request) -> Scope:
        if self._scope is not None:
            return self._scope
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else request.cookies.get(COOKIE)
        caller = self.known(token)
        if caller is None:
            raise ScopeError("authorization", "no known bearer token: this server shows no scope "
                                              "without one (open a page with ?token=... once)")
        return caller.scope


def _when(value: dt.datetime | None, ms: bool = False) -> str:
    """A time for reading, in UTC; with ``ms``, to the millisecond (transaction times
    of one load are often within a second). ``isoformat``, not ``strftime``: its ``%Y``
    writes the year 1 as "1", not "0001"."""
    if value is None:
        return ""
    text = value.astimezone(dt.UTC).isoformat(sep=" ", timespec="milliseconds" if ms else "seconds")
    return text.removesuffix("+00:00") + "Z"


KEY_PARTS = ("unit", "definition")  # empty is a key's own value (the default), absent is any


def _url(path: str, /, **params: Any) -> str:
    """``path`` with the given query parameters, leaving out the empty ones but an empty
    unit or definition, which names a key's own (``path`` is positional only: the
    templates pass a request's own parameters, which may name one)."""
    kept = {k: v for k, v in params.items() if v not in (None, "", ()) or (v == "" and k in KEY_PARTS)}
    return f"{path}?{urlencode(kept, doseq=True)}" if kept else path


def templates() -> Jinja2Templates:
    env = Environment(loader=PackageLoader("graphmem.ui", "templates"),
                      autoescape=select_autoescape(default=True), trim_blocks=True, lstrip_blocks=True)
    env.filters.update(number=pages.number, when=_when, iso=pages.iso)
    env.globals.update(url=_url, shown=pages.shown_version, evidence=pages.evidence)
    return Jinja2Templates(env=env)


def build_app(memory: Memory, *, scope: Scope | None = None, tokens: Mapping[str, Caller] | None = None,
              hosts: tuple[str, ...] | None = None, secure: bool = False) -> Starlette:
    """The app on ``memory``: one fixed ``scope``, or ``tokens`` (hash -> caller); with
    ``hosts``, requests naming any other Host are refused (400); with ``secure``, the
    token cookie is sent over HTTPS only (served off loopback, behind TLS)."""
    gate, views = Gate(scope, tokens), templates()

    def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        return views.TemplateResponse(request, name, {**context, "q": request.query_params},
                                      status_code=status, headers=HEADERS)

    def route(path: str, page: Callable[..., pages.Page]) -> Route:
        def endpoint(request: Request) -> Response:  # sync: Starlette runs it in a thread
            if gate.tokens and "token" in request.query_params:
                return _login(request, gate, secure)
            name, context = page(memory, gate.scope(request), pages.Params(request.query_params))
            return render(request, name, context)
        return Route(path, endpoint, methods=["GET"], name=page.__name__)

    def failed(status: int, title: str) -> Any:
        def handler(request: Request, exc: Exception) -> Response:
            if status == 500:
                log.exception("graphmem ui: %s failed", request.url.path, exc_info=exc)
            message = str(exc) if status < 500 else "the server failed to answer this page; see its log"
            response = render(request, "error.html", {"title": title, "message": message}, status)
            if status == 401:
                response.headers["WWW-Authenticate"] = "Bearer"
            return response
        return handler

    static = StaticFiles(directory=Path(__file__).with_name("static"))
    return Starlette(
        routes=[*(route(path, page) for path, page in pages.PAGES.items()),
                Mount("/static", static, name="static")],
        middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(hosts))] if hosts else [],
        exception_handlers={ScopeError: failed(401, "not authorised"), InputError: failed(400, "bad request"),
                            NotFoundError: failed(404, "not found"), Exception: failed(500, "server error")})


def _login(request: Request, gate: Gate, secure: bool) -> Response:
    """``?token=``: a known token becomes a cookie, and the address loses it."""
    token = request.query_params["token"]
    if gate.known(token) is None:
        raise ScopeError("token", "not a token this server knows")
    rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
    response = RedirectResponse(f"{request.url.path}?{urlencode(rest)}" if rest else request.url.path, 303)
    # Lax, not Strict: a shared link opened from elsewhere must carry the cookie; the app
    # only reads (GET), so a cross-site request can change nothing
    response.set_cookie(COOKIE, token, httponly=True, samesite="lax",
                        secure=secure or request.url.scheme == "https")
    return response


def allowed_hosts(host: str) -> tuple[str, ...] | None:
    """The Host names a server bound to ``host`` answers: on loopback its loopback names and
    the bound address itself (``127.0.0.2``, ``[::1]``); off loopback any (the tokens decide)."""
    if not loopback(host):
        return None
    return tuple(dict.fromkeys((*LOOPBACK_HOSTS, f"[{host}]" if ":" in host else host)))


def serve(memory: Memory, *, scope: Scope, tokens: Path | None, host: str = "127.0.0.1",
          port: int = 8766) -> None:
    """Run the view until the process ends: ``scope`` on loopback, or each token's scope.
    Off loopback the token cookie is marked Secure: terminate TLS in front (a reverse
    proxy), since this server speaks plain HTTP."""
    import uvicorn

    if tokens is None and not loopback(host):
        raise InputError("--tokens", f"{host} is not a loopback address: serving it needs a tokens file "
                                     "(each bearer token maps to one scope)")
    app = build_app(memory, scope=None if tokens else scope, tokens=load_tokens(tokens) if tokens else None,
                    hosts=allowed_hosts(host), secure=not loopback(host))
    sock = listening(host, port)  # a taken port: graphmem's one-line error, exit 1 (as `graphmem mcp`)
    display = f"[{host}]" if ":" in host else host
    serving = "a scope per token" if tokens else f"tenant {scope.tenant}"
    print(f"graphmem ui on http://{display}:{port}/ ({serving})", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
