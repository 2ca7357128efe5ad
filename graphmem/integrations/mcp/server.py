"""The graphmem MCP server: built for one Memory, an access policy and grants, and run
on stdio or streamable HTTP.

Over HTTP the server binds to loopback unless told otherwise (and the SDK then refuses
requests whose Host or Origin is not loopback: DNS-rebinding protection); every request
needs a bearer token from the tokens file (see :mod:`.access`); :mod:`.transport` binds the
port and answers a request whose id is of the wrong type.
"""

from __future__ import annotations

import logging
from importlib.metadata import version

from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from ...errors import InputError
from ...memory import Memory
from ..tokens import loopback
from .access import Access, TokenAccess
from .tools import Grants, register
from .transport import serve_http

log = logging.getLogger("graphmem.mcp")

INSTRUCTIONS = """graphmem is a bitemporal memory: every fact has a valid time (its period), a
publication time (available_by: when it became public) and a transaction time (recorded_at:
when graphmem stored it). Reads take a cutoff (only what was public by then) and a known_at
(only what graphmem had recorded by then); both default to now, and earlier values answer
"what did we know then" without look-ahead. Every answer carries its sources with authority
and URI and says how many versions each filter removed. A conflicted answer means
independent sources of equal authority disagree: report the conflict, never pick a value.
This server works in one fixed scope; no argument can change it. Writes go through gates:
what lacks evidence is kept as a candidate for review, never made live. Text copied from a
context this server built is refused as new evidence (cite the original source instead)."""


def build_server(memory: Memory, access: Access, grants: Grants | None = None, *,
                 url: str = "http://127.0.0.1:8765") -> MCPServer:
    """An MCP server on ``memory`` whose tools work in the scope ``access`` decides; with a
    :class:`TokenAccess`, the SDK refuses any HTTP request without a token it knows (``url``
    is the server's own address, which the SDK's auth settings name)."""
    auth = {}
    if isinstance(access, TokenAccess):
        auth = {"token_verifier": access,
                "auth": AuthSettings(issuer_url=url, resource_server_url=None)}
    return MCPServer("graphmem", instructions=INSTRUCTIONS, version=version("graphmem"),
                     log_level="WARNING", tools=register(memory, access, grants or Grants()), **auth)


def serve(memory: Memory, access: Access, grants: Grants, *, transport: str,
          host: str = "127.0.0.1", port: int = 8765) -> None:
    """Run until the client (stdio) or the process (HTTP) ends."""
    if transport == "stdio":
        build_server(memory, access, grants).run("stdio")
        return
    if not isinstance(access, TokenAccess):
        raise InputError("--tokens", "the HTTP transport serves only bearer tokens from a tokens file")
    if not loopback(host):
        log.warning("serving on %s, which is not a loopback address: anyone who can reach it and "
                    "holds a token gets that token's scope", host)
    display = f"[{host}]" if ":" in host else host
    server = build_server(memory, access, grants, url=f"http://{display}:{port}")
    serve_http(server.streamable_http_app(host=host, transport_security=_guard(host, display)), host, port)


def _guard(host: str, display: str) -> TransportSecuritySettings | None:
    """DNS-rebinding protection on every loopback address: the SDK turns it on by itself
    only for the exact strings 127.0.0.1, localhost and ::1, so on 127.0.0.2 (or ::1
    written out) a request whose Host or Origin named another site was served. The
    loopback names the SDK allows, and the address bound (None: not loopback, the SDK's
    default)."""
    if not loopback(host):
        return None
    names = dict.fromkeys([display, "127.0.0.1", "localhost", "[::1]"])
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=[f"{n}:*" for n in names],
                                     allowed_origins=[f"http://{n}:*" for n in names])
