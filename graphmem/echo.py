"""The echo guard: memory graphmem injected into a context never comes back as evidence.

An agent that was shown "acme revenue Q1 = 110 (source 10-K)" and then writes that
sentence down has not observed anything new; recording it as a source would let the
memory corroborate itself and grow more credible with every round. So every text that
would become evidence (a source's title, uri and meta values; an experience's observed
outcome) is compared with what context snapshots in the same scope rendered:

- the whole text equals a snapshot's rendering,
- one of its lines, or one ``" | "``-separated segment of a line, equals a rendered
  memory line or the claim part of one (compared after :func:`normalise`), or
- it cites a memory id (``fv_…``, ``exp_…``, ``ts_…``) that a snapshot injected.

A match raises :class:`EchoError` naming the field, the snapshot and the memory; the
write is refused as a whole. A paraphrase that shares no line, segment or id with a
rendering is not caught: this guard is for verbatim echo, the common case of an agent
quoting its context back.

Snapshots store only hashes of the normalised lines (``INCLUDED.line_hash`` and
``claim_hash``, ``ContextSnapshot.echo_hash``), so the check is a few index seeks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

from .db import Tx
from .errors import EchoError
from .models import Scope, Source
from .values import digest

MEMORY_ID = re.compile(r"\b(?:fv|exp|ts)_[0-9a-f]{24}\b")
_TAG = re.compile(r"^\[[a-z_]+ [a-z]+_[0-9a-f]{24}\]\s*")
_BULLET = re.compile(r"^[-*•]\s+")
SEGMENT = " | "
MIN_CLAIM = 12  # shorter claims are not fingerprinted: too likely to occur by chance


def fold(text: str) -> str:
    """The text as Unicode compares it ignoring case and form: NFKC with full case folding
    ("Straße" is "STRASSE", a decomposed "é" or a full-width letter the plain one), and no
    invisible format characters (a zero-width space or joiner, a soft hyphen) - variants a
    model's output or a copy and paste make of the same words."""
    if text.isascii():  # the usual case, and the same answer: no other form, no format characters
        return text.lower()
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def normalise(text: str) -> str:
    """Case, Unicode form, whitespace, a leading bullet and memory tag, and trailing
    punctuation do not make an echo new."""
    text = " ".join(fold(text).split())
    text = _BULLET.sub("", text)
    text = _TAG.sub("", text)
    return text.rstrip(" .;,")


def fingerprint(text: str) -> str:
    return digest(normalise(text), prefix="e")


def fingerprints(text: str) -> list[str]:
    """Hashes of the whole text, of each line and of each segment of a line (split once
    its whitespace is collapsed, as the rendering's own segments are)."""
    parts = {text}
    for line in text.splitlines():
        parts.add(line)
        parts.update(" ".join(fold(line).split()).split(SEGMENT))  # "a\u00a0|\tb" too
    return sorted({fingerprint(p) for p in parts if len(normalise(p)) >= MIN_CLAIM})


def source_texts(source: Source) -> list[tuple[str, str]]:
    """The fields of a source that could carry echoed text."""
    texts = [("title", source.title), ("uri", source.uri)]
    texts += [(f"meta[{key!r}]", value) for key, value in sorted(source.meta.items())]
    return [(field, text) for field, text in texts if text]


def refuse(tx: Tx, scope: Scope, where: str, texts: Iterable[tuple[str, str]]) -> None:
    """Raise EchoError if any text repeats what a context snapshot of this scope injected.

    One statement for all the texts; the field named in the error is the first that matched.
    """
    by_hash: dict[str, str] = {}
    by_id: dict[str, str] = {}
    for field, text in texts:
        for h in fingerprints(text):
            by_hash.setdefault(h, field)
        for mid in MEMORY_ID.findall(fold(text)):
            by_id.setdefault(mid, field)
    if not by_hash and not by_id:
        return
    rows = tx.run("echo.find", hashes=sorted(by_hash), memory_ids=sorted(by_id),
                  tenant=scope.tenant, scope=scope.id)
    if not rows:
        return
    row = min(rows, key=lambda r: (r["match"] != "rendering", r["snapshot"]))
    field = by_hash.get(row["hash"]) or by_id.get(row["memory_id"], "text")
    what = {
        "rendering": "is the whole rendering",
        "line": f"repeats the rendered line of memory {row['memory_id']}",
        "claim": f"repeats the rendered claim of memory {row['memory_id']}",
        "memory_id": f"cites memory {row['memory_id']}, which it injected",
    }[row["match"]]
    raise EchoError(
        f"{where}.{field}",
        f"echo of context snapshot {row['snapshot']}: the text {what}; memory graphmem "
        "injected is not new evidence - cite the original source instead",
    )


def check_source(tx: Tx, scope: Scope, source: Source) -> None:
    """The echo guard for a source about to be recorded (see module docstring)."""
    refuse(tx, scope, f"source {source.id!r}", source_texts(source))
