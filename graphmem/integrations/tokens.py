"""Bearer tokens, each mapped to one scope, read from a tokens file; and what counts as a
loopback address. Shared by the servers that serve a scope over HTTP (``graphmem mcp
--transport http``, ``graphmem ui``), and free of their frameworks' imports.

The tokens file is TOML::

    [[tokens]]
    name = "research-agent"          # the actor; default: token-<first 8 hex of its hash>
    token_sha256 = "9f86d081..."     # or: token = "the token itself"
    tenant = "acme"
    scope = { project = "q3" }       # optional scope keys beside the tenant

Tokens are compared by their SHA-256, so the file can hold hashes only
(``printf %s "$TOKEN" | sha256sum``). At most 10,000 tokens; a token is 16 to 4,096
characters of visible ASCII (``!`` to ``~``): it travels in an HTTP header, which servers
read as Latin-1 and trim of spaces, so a token with another character could never be
presented as written, and would be refused on every request.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..models import Scope

MAX_TOKENS = 10_000
TOKEN_LENGTH = (16, 4096)
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_VISIBLE_ASCII = re.compile(r"[!-~]+")


@dataclass(frozen=True)
class Caller:
    """The scope a call works in and the actor it is recorded by."""

    scope: Scope
    actor: str


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load_tokens(path: Path) -> dict[str, Caller]:
    """The tokens file at ``path``: each token's SHA-256 mapped to its caller."""
    where = f"tokens file {path}"
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))  # an editor's byte-order mark too
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
    return tokens


def loopback(host: str) -> bool:
    """Whether binding ``host`` serves this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
        if not _VISIBLE_ASCII.fullmatch(token):
            raise InputError(where, "token: visible ASCII only (no spaces, no other characters): "
                                    "it is sent in an HTTP header")
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
