"""Named Cypher statements, loaded once from the package's cypher/ folder.

Every statement graphmem runs lives in a ``.cypher`` file under a header line
``// name: group.statement``; Python code refers to statements by that name only,
with parameters, never by building query text. The catalogue is parsed at import,
so a duplicate or empty name fails before any connection is made, and asking for
a name that does not exist fails with the list of close names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from importlib import resources

from .errors import QueryCatalogError

_HEADER = re.compile(r"^//\s*name:\s*(?P<name>\S+)\s*$")
_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")


def parse(text: str, origin: str) -> dict[str, str]:
    """Split one file's text into ``{name: statement}``; refuse duplicates and empties."""
    statements: dict[str, str] = {}
    name: str | None = None
    lines: list[str] = []

    def close() -> None:
        if name is None:
            if "".join(lines).strip() and any(
                not ln.strip().startswith("//") for ln in lines if ln.strip()
            ):
                raise QueryCatalogError(f"{origin}: Cypher before the first '// name:' header")
            return
        body = "\n".join(lines).strip()
        if not body or all(ln.strip().startswith("//") for ln in body.splitlines()):
            raise QueryCatalogError(f"{origin}: statement {name!r} is empty")
        statements[name] = body

    for lineno, line in enumerate(text.splitlines(), 1):
        match = _HEADER.match(line.strip())
        if match:
            close()
            name = match["name"]
            if not _NAME.match(name):
                raise QueryCatalogError(f"{origin}:{lineno}: bad statement name {name!r}")
            if name in statements:
                raise QueryCatalogError(f"{origin}:{lineno}: duplicate statement name {name!r}")
            lines = []
        else:
            lines.append(line)
    close()
    return statements


class Catalogue(Mapping[str, str]):
    """All named statements of a package folder; a ``Mapping`` from name to Cypher."""

    def __init__(self, statements: dict[str, str]):
        self._statements = statements

    @classmethod
    def load(cls, package: str = "graphmem.cypher") -> Catalogue:
        merged: dict[str, str] = {}
        files = sorted(
            (f for f in resources.files(package).iterdir() if f.name.endswith(".cypher")),
            key=lambda f: f.name,
        )
        if not files:
            raise QueryCatalogError(f"no .cypher files found in package {package}")
        for file in files:
            for name, body in parse(file.read_text(encoding="utf-8"), file.name).items():
                if name in merged:
                    raise QueryCatalogError(f"{file.name}: duplicate statement name {name!r}")
                merged[name] = body
        return cls(merged)

    def __getitem__(self, name: str) -> str:
        try:
            return self._statements[name]
        except KeyError:
            near = difflib.get_close_matches(name, self._statements, n=3)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise QueryCatalogError(f"no Cypher statement named {name!r}{hint}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._statements)

    def __len__(self) -> int:
        return len(self._statements)

    def group(self, prefix: str) -> list[str]:
        """Names under ``prefix.`` in sorted order (migrations are applied in this order)."""
        return sorted(n for n in self._statements if n.startswith(prefix + "."))


QUERIES = Catalogue.load()
