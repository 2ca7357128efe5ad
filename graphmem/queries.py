"""Named Cypher statements, loaded once from the package's cypher/ folder.

Every statement graphmem runs lives in a ``.cypher`` file under a header line
``// name: group.statement``; Python code refers to statements by that name only,
with parameters, never by building query text. The catalogue is parsed at import,
so a duplicate or empty name fails before any connection is made, and asking for
a name that does not exist fails with the list of close names.

A piece of Cypher that two statements must share word for word (the text a fact is
found by, written both when a version is created and when it is re-indexed) is a
fragment: declared under ``// fragment: group.piece`` and pasted, at load, in place of
each line ``// include: group.piece``. Fragments are not statements: they cannot be
run on their own. An include of a name that is neither a fragment nor a statement, or
includes that form a cycle, fail at load.

A whole statement may be included the same way, to run inside another one (in a
``CALL`` subquery) so that one rule keeps one text: ``// include: fact.read
$reads=reads $times=times`` pastes ``fact.read`` with each listed parameter replaced by
a variable, a variable's property (``$flagged=k.flagged``) or a literal of the including
statement. A binding of a parameter that the included text does not use fails at load,
so a renamed parameter cannot go unnoticed, and so does an include line that does not
parse (it would otherwise stay a comment, and its text would silently go missing).

What the server receives is the resolved text without its comments, indentation or
blank lines (``compact``): about 40% shorter, which Neo4j hashes and the driver packs
on every run; the files keep the explanations.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import NamedTuple

from .errors import QueryCatalogError

_HEADER = re.compile(r"^//\s*(?P<kind>name|fragment):\s*(?P<name>\S+)\s*$")
_INCLUDE = re.compile(r"^[ \t]*//[ \t]*include:[ \t]*(?P<name>\S+)"
                      r"(?P<binds>(?:[ \t]+\$\w+=\w+(?:\.\w+)?)*)[ \t]*$", re.MULTILINE)
_ANY_INCLUDE = re.compile(r"^[ \t]*//[ \t]*include:.*$", re.MULTILINE)
_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$")


class Parsed(NamedTuple):
    statements: dict[str, str]
    fragments: dict[str, str]


def parse(text: str, origin: str) -> Parsed:
    """Split one file's text into its statements and fragments, by name; refuse
    duplicates and empties."""
    parsed = Parsed({}, {})
    kind, name = "name", None
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
        (parsed.statements if kind == "name" else parsed.fragments)[name] = body

    for lineno, line in enumerate(text.splitlines(), 1):
        match = _HEADER.match(line.strip())
        if match:
            close()
            kind, name = match["kind"], match["name"]
            if not _NAME.match(name):
                raise QueryCatalogError(f"{origin}:{lineno}: bad statement name {name!r}")
            if name in parsed.statements or name in parsed.fragments:
                raise QueryCatalogError(f"{origin}:{lineno}: duplicate statement name {name!r}")
            lines = []
        else:
            lines.append(line)
    close()
    return parsed


def resolve(statements: dict[str, str], fragments: dict[str, str]) -> dict[str, str]:
    """The statements with every ``// include:`` line replaced by its fragment, or by the
    statement it names with the parameters it binds."""

    def expand(name: str, body: str, chain: tuple[str, ...]) -> str:
        def paste(match: re.Match[str]) -> str:
            wanted = match["name"]
            if wanted not in fragments and wanted not in statements:
                raise QueryCatalogError(
                    f"{name!r} includes {wanted!r}, which is not a fragment or a statement")
            if wanted in chain:
                raise QueryCatalogError(f"{name!r}: fragments include each other: {' -> '.join(chain + (wanted,))}")
            text = expand(wanted, fragments[wanted] if wanted in fragments else statements[wanted],
                          chain + (wanted,))
            return bind(name, wanted, text, match["binds"].split())

        for line in _ANY_INCLUDE.findall(body):  # else a malformed include is just a comment
            if not _INCLUDE.fullmatch(line):
                raise QueryCatalogError(f"{name!r}: an include line must read `// include: name "
                                        f"[$param=variable[.property] ...]`: {line.strip()!r}")
        return _INCLUDE.sub(paste, body)

    return {name: expand(name, body, ()) for name, body in statements.items()}


def bind(name: str, included: str, text: str, binds: list[str]) -> str:
    """``text`` (what ``name`` includes) with each ``$param=value`` binding applied."""
    for binding in binds:
        param, value = binding[1:].split("=")
        pattern = re.compile(rf"\${param}\b")
        if not pattern.search(text):
            raise QueryCatalogError(f"{name!r} binds ${param}, which {included!r} does not use")
        text = pattern.sub(value, text)
    return text


def compact(text: str) -> str:
    """``text`` without ``//`` comments, blank lines, or spaces at either end of a line,
    outside string literals and backquoted names (which may span lines)."""
    out, line, quote, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote != "`":
                line.append(text[i:i + 2])
                i += 2
                continue
            quote = None if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif c == "\n":
            out.append("".join(line).strip())
            line = []
            i += 1
            continue
        line.append(c)
        i += 1
    out.append("".join(line).strip())
    return "\n".join(x for x in out if x)


class Catalogue(Mapping[str, str]):
    """All named statements of a package folder; a ``Mapping`` from name to Cypher."""

    def __init__(self, statements: dict[str, str]):
        self._statements = statements

    @classmethod
    def load(cls, package: str = "graphmem.cypher") -> Catalogue:
        merged = Parsed({}, {})
        files = sorted(
            (f for f in resources.files(package).iterdir() if f.name.endswith(".cypher")),
            key=lambda f: f.name,
        )
        if not files:
            raise QueryCatalogError(f"no .cypher files found in package {package}")
        for file in files:
            parsed = parse(file.read_text(encoding="utf-8"), file.name)
            for name in [*parsed.statements, *parsed.fragments]:
                if name in merged.statements or name in merged.fragments:
                    raise QueryCatalogError(f"{file.name}: duplicate statement name {name!r}")
            merged.statements.update(parsed.statements)
            merged.fragments.update(parsed.fragments)
        resolved = resolve(merged.statements, merged.fragments)
        return cls({name: compact(text) for name, text in resolved.items()})

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
