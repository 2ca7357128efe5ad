"""Who is calling, decided by the server and never by a tool argument.

Over stdio (and an in-memory session) the server serves ONE scope, given on its command
line or environment, and one actor name that approvals, rejections, invalidations and
erasures are recorded ``by``. Over HTTP every request must carry a bearer token listed in
a tokens file; each token maps to exactly one scope and actor. A request without a known
token is refused (401) before any tool runs, and an HTTP session is bound to the token
that opened it (the SDK answers another token's request for it as if it did not exist).

The tokens file's format: :mod:`graphmem.integrations.tokens`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context

from ...errors import ScopeError
from ...models import Scope
from ..tokens import Caller, digest, load_tokens

__all__ = ["Access", "Caller", "FixedAccess", "TokenAccess", "digest"]


class Access(Protocol):
    def caller(self, ctx: Context) -> Caller: ...


@dataclass(frozen=True)
class FixedAccess:
    """One scope and actor for every call (stdio, in-memory sessions)."""

    scope: Scope
    actor: str = "mcp"

    def caller(self, ctx: Context) -> Caller:
        return Caller(self.scope, self.actor)


class TokenAccess:
    """Bearer tokens from a tokens file, each mapped to one scope (see the module docstring).

    It is the SDK's token verifier too: a token it does not know authenticates nothing,
    so the SDK refuses the request before any tool runs."""

    def __init__(self, tokens: Mapping[str, Caller]):
        self._by_hash = dict(tokens)

    @classmethod
    def load(cls, path: Path) -> TokenAccess:
        return cls(load_tokens(path))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's hook: an AccessToken for a listed token, None for any other."""
        hashed = digest(token)
        if hashed not in self._by_hash:
            return None
        return AccessToken(token=token, client_id=hashed, scopes=[])

    def caller(self, ctx: Context) -> Caller:
        request = ctx.request_context.request
        user = getattr(request, "scope", {}).get("user") if request is not None else None
        if not isinstance(user, AuthenticatedUser) or user.access_token.client_id not in self._by_hash:
            raise ScopeError("authorization", "no known bearer token: this server serves no scope "
                                              "without one")
        return self._by_hash[user.access_token.client_id]
