"""Who is calling, decided by the server and never by a tool argument.

Over stdio (and an in-memory session) the server serves ONE scope, given on its command
line or environment, and one actor name that approvals, rejections, invalidations and
erasures are recorded ``by``. Over HTTP every request must carry a bearer token listed in
a tokens file; each token maps to exactly one scope and actor. A request without a known
token is refused (401) before any tool runs, and an HTTP session is bound to the token
that opened it (the SDK answers another token's request for it as if it did not exist).

The tokens file is TOML::

    [[tokens]]
    name = "research-agent"          # the actor; default: token-<first 8 hex of its hash>
    token_sha256 = "9f86d081..."     # or: token = "the token itself"
    tenant = "acme"
    scope = { project = "q3" }       # optional scope keys beside the tenant

Tokens are compared by their SHA-256, so the file can hold hashes only
(``printf %s "$TOKEN" | sha256sum``). At most 10,000 tokens; a token is 16 to 4,096
characters.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import Context

from ...errors import InputError, ScopeError
from ...models import Scope

MAX_TOKENS = 10_000
TOKEN_LENGTH = (16, 4096)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class Caller:
    """The scope a call works in and the actor it is recorded by."""

    scope: Scope
    actor: str


class Access(Protocol):
    def caller(self, ctx: Context) -> Caller: ...


@dataclass(frozen=True)
class FixedAccess:
    """One scope and actor for every call (stdio, in-memory sessions)."""

    scope: Scope
    actor: str = "mcp"

    def caller(self, ctx: Context) -> Caller:
        return Caller(self.scope, self.actor)


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class TokenAccess:
    """Bearer tokens from a tokens file, each mapped to one scope (see the module docstring).

    It is the SDK's token verifier too: a token it does not know authenticates nothing,
    so the SDK refuses the request before any tool runs."""

    def __init__(self, tokens: Mapping[str, Caller]):
        self._by_hash = dict(tokens)

    @classmethod
    def load(cls, path: Path) -> TokenAccess:
        where = f"tokens file {path}"
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise InputError(where, str(exc)) from exc
        entries = data.get("tokens")
        if not isinstance(entries, list) or not entries:
            raise InputError(where, "expected one or more [[tokens]] tables")
        if len(entries) > MAX_TOKENS:
            raise InputError(where, f"at most {MAX_TOKENS} tokens, got {len(entries)}")
        tokens: dict[str, Caller] = {}
        for n, entry in enumerate(entries, 1):
            hashed, caller = _entry(entry, f"{where}, token {n}")
            if hashed in tokens:
                raise InputError(f"{where}, token {n}", "the same token is listed twice")
            tokens[hashed] = caller
        return cls(tokens)

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


def _entry(entry: Any, where: str) -> tuple[str, Caller]:
    if not isinstance(entry, dict):
        raise InputError(where, "a table is required")
    unknown = set(entry) - {"name", "token", "token_sha256", "tenant", "scope"}
    if unknown:
        raise InputError(where, f"unknown field(s) {', '.join(sorted(unknown))}")
    if ("token" in entry) == ("token_sha256" in entry):
        raise InputError(where, "give exactly one of token or token_sha256")
    if "token" in entry:
        token = entry["token"]
        if not isinstance(token, str) or not TOKEN_LENGTH[0] <= len(token) <= TOKEN_LENGTH[1]:
            raise InputError(where, f"token: a string of {TOKEN_LENGTH[0]} to {TOKEN_LENGTH[1]} "
                                    "characters")
        hashed = digest(token)
    else:
        hashed = str(entry["token_sha256"]).lower()
        if not _HEX64.match(hashed):
            raise InputError(where, "token_sha256: 64 hexadecimal digits")
    keys = entry.get("scope", {})
    if not isinstance(keys, dict) or "tenant" in keys:
        raise InputError(where, "scope: a table of scope keys (the tenant goes in tenant)")
    try:
        scope = Scope(tenant=entry.get("tenant"), **keys)
    except ValueError as exc:
        raise InputError(where, f"tenant/scope: {exc}") from exc
    name = entry.get("name") or f"token-{hashed[:8]}"
    if not isinstance(name, str):
        raise InputError(where, "name: a string is required")
    return hashed, Caller(scope, name)
