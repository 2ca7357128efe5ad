"""Every bound graphmem puts on its input, in one place, each with the reason for its number.

A bound is checked before any query runs: in the input models (a pydantic validator,
which :mod:`graphmem.models` turns into an :class:`~graphmem.errors.InputError` naming
the model and field) and in ``Memory``'s own arguments (an InputError naming the
argument). Nothing is written when one fails.

Text is measured in UTF-8 bytes, because that is what the server stores and indexes:
an ASCII character is one byte, an accented letter two, most CJK characters three, an
emoji four. The bounds are far above anything real data needs (gate on what cannot be
true, never on what has not been seen yet) and far below what breaks the server, the
index or a context window.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterable, Iterator, Sized
from decimal import Decimal
from typing import Any

from .errors import InputError

# ---------------------------------------------------------------- identifiers and scope

INDEX_KEY_BYTES = 8167
"""Neo4j 5's range-index key limit: an indexed property, or all properties of a composite
index together, may take at most 8,167 bytes (a longer one fails the write with
``Property value is too large to index``, on the server, after earlier work)."""

TENANT_BYTES = 512
"""A tenant. It leads every composite index (``FactKey(tenant, entity, attribute)``,
``Source(tenant, id)``, ``Candidate(tenant, scope)`` ...), so it must leave room for
two identifiers in the 8,167 bytes of an index key."""

IDENTIFIER_BYTES = 2048
"""An identifier: entity, attribute, unit, definition, source id, publisher, kind, task
id, event id, method, alias, and any id passed back to graphmem (version, memory,
candidate, snapshot ids). Entity and attribute share one index key with the tenant:
512 + 2 x 2,048 bytes stays well inside 8,167. Real identifiers are far shorter (the
longest US-GAAP element names have about 200 characters)."""

NAME_BYTES = 1024
"""A name graphmem prefixes to make an identifier: who made a resolution, approval,
invalidation, erasure or retraction (``by``; a resolution's publisher is ``user:<by>``),
a derivation's method and method version (its publisher is ``method:<method>``). A
person's or a tool's name, with room for the prefix inside IDENTIFIER_BYTES."""

SCOPE_KEYS = 16
"""Keys a scope carries beside its tenant (a project, a user, a region ...)."""

SCOPE_BYTES = 2048
"""A whole scope as graphmem writes it (``Scope.id``: tenant, key names and values as
JSON). It is stored on every node and indexed with the tenant for candidates
(``Candidate(tenant, scope)``): 512 + 2,048 bytes."""

# ---------------------------------------------------------------- text and values

TEXT_BYTES = 65536
"""Free text: an entity's name, a source's title, uri and each meta value, a reason, an
experience's trigger, preconditions, steps and outcome, a task's goal, checkpoint and
open items, and a text fact value. 64 KiB is about 16,000 tokens: a memory is one line
of a rendered context, and a line longer than that would not fit a useful context budget
anyway. A document belongs in a Source (its uri), not in a fact."""

META_BYTES = 1048576
"""A source's ``meta`` as graphmem stores it (JSON, keys and values together). The KPI
loader keeps each row's basis and note there, so a filing's meta grows with its rows;
1 MiB holds thousands of them."""

LIST_ITEMS = 256
"""Items in one list field: a fact's sources, an entity's aliases, an experience's
evidence, preconditions and steps, a task's open items and artifacts, the entities a
memory is about, the kinds a ``Require`` accepts."""

DECIMAL_DIGITS = 64
"""Significant digits of a decimal value (trailing zeros of an integer do not count).
No measured or reported quantity has more than about 20; Python's default decimal
context computes 28, IEEE decimal128 holds 34. The canonical text graphmem stores is
then at most a few hundred characters, where ``Decimal("1e100000000")`` (14
characters of input) would have been 100,000,001."""

DECIMAL_EXPONENT = 308
"""A non-zero decimal's magnitude: its leading digit at 10^-308 .. 10^308, and the
value within the range of a double (about 1.8 x 10^308). Beside the exact text, graphmem
stores a float copy for range queries, which must be finite and not round a non-zero
value to zero."""

# ---------------------------------------------------------------- calls

SEARCH_TEXT_BYTES = 8192
"""A search's text: a question or a few sentences (about 2,000 tokens), not a document."""

SEARCH_TERMS = 256
"""Searchable words of a search's text (stop words are not counted). Each becomes one
Lucene clause, and Lucene refuses a query of more than 1,024 clauses (``TooManyClauses``,
after the index was reached); 256 leaves room for the scope and entity clauses."""

SEARCH_LIMIT = 1000
"""Hits a search returns (``limit``): a page to rank and render, not an export."""

SCREEN_ENTITIES = 100_000
"""Entities one ``screen`` names (its universe): every listed company several times over,
sent to the server as one statement's parameter."""

PAGE_OFFSET = 1_000_000
"""Where one page of a listing (``context_snapshots``, the web view's pages) may start:
the server skips every row before it, so a deeper page is a query to narrow instead."""

PANEL_CUTOFFS = 1_000
"""Cutoffs one ``panel`` takes: every month end of eighty years; each is a screen's worth
of cells, held in memory as the result."""

PANEL_FRAMES = 400
"""Frames one ``panel`` takes: every quarter of a century, with its years and instants."""

PANEL_CELLS = 5_000_000
"""Cells one ``panel`` may return (entities x frames x cutoffs, checked before any query
when the entities are given, else once the universe is known): about the memory of a
few gigabytes of answers."""

CONTEXT_MEMORIES = SEARCH_LIMIT
"""Memories one ``build_context`` renders: the hits of one search."""

TOKEN_BUDGET = 10_000_000
"""A context's ``token_budget``: about ten times the largest model context offered
today; a budget above it is a mistake (a byte count, an unset sentinel)."""

IDS_PER_CALL = 10000
"""Ids in one call (``versions``, ``memories``, ``resolve``'s versions, ``derive``'s
inputs): each is looked up in one statement, whose parameters the server holds in
memory."""

CHUNK_SIZE = 10000
"""``Memory(chunk_size=)``: assertions per transaction of ``assert_facts``. Larger
chunks stop paying off long before (the write path measures best near 500) and hold
more transaction state in the server's heap."""

RECORD_ITEMS = 100_000
"""Facts of one ``record`` call (derivations of one ``derive_many``), written in ONE transaction (a filing and all it
reports: a large 10-K reports a few thousand values). The whole transaction's state sits
in the server's heap until it commits."""

RECORD_SOURCES = 1000
"""Sources of one ``record`` call (one transaction)."""

DEPTH = 10000
"""``max_depth`` of ``impact`` and ``lineage``: a derivation chain is rarely ten deep."""

KPI_FILE_BYTES = 64 * 1048576
"""A KPI table (loaders/kpi.py), which is read into memory whole before anything is
written: one row per reported figure, so megabytes, not gigabytes."""


# ---------------------------------------------------------------- checks


def utf8_problem(text: str, limit: int) -> str | None:
    """Why ``text`` is over ``limit`` UTF-8 bytes, or is no text UTF-8 can carry, or None
    (cheap for short ASCII text). A lone surrogate (a JSON ``\\ud800`` escape, a file name
    decoded with surrogateescape) cannot be sent to the server: unchecked, it failed
    inside the write or read as a UnicodeEncodeError that named no field."""
    if len(text) * 4 <= limit and text.isascii():  # no character takes more than four bytes
        return None
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return f"not valid Unicode: a lone surrogate {text[exc.start]!r} at character {exc.start:,}"
    if size <= limit:
        return None
    return f"{size:,} bytes in UTF-8; at most {limit:,}"


def decimal_problem(value: Decimal) -> str | None:
    """Why a finite decimal is outside DECIMAL_DIGITS / DECIMAL_EXPONENT, or None.

    Reads the decimal's exponent and, only when its short text (``str``, which writes
    ``1E+100000000``, never the 100,000,001 characters of its fixed-point text) is longer
    than the digits allowed, its digit tuple. A zero is always within bounds."""
    if not value:
        return None
    if len(str(value)) > DECIMAL_DIGITS:  # else it cannot have that many digits
        digits = value.as_tuple().digits
        significant = len(digits)
        while significant > 1 and digits[significant - 1] == 0:  # 1000 has one
            significant -= 1
        if significant > DECIMAL_DIGITS:
            return f"{significant:,} significant digits; at most {DECIMAL_DIGITS}"
    leading = value.adjusted()  # the power of ten of the leading digit
    if not -DECIMAL_EXPONENT <= leading <= DECIMAL_EXPONENT or (
            leading == DECIMAL_EXPONENT and not math.isfinite(float(value))):
        return (f"magnitude 10^{leading:,} is outside 10^-{DECIMAL_EXPONENT} .. "
                f"1.8 x 10^{DECIMAL_EXPONENT} (the float copy kept for range queries must "
                "be finite and non-zero)")
    return None


def check_text(where: str, value: Any, limit: int = TEXT_BYTES, *,
               optional: bool = False) -> str | None:
    """A string argument of at most ``limit`` bytes (None allowed when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InputError(where, f"a string is required, got {type(value).__name__}")
    problem = utf8_problem(value, limit)
    if problem:
        raise InputError(where, problem)
    return value


def check_id(where: str, value: Any, *, optional: bool = False,
             limit: int = IDENTIFIER_BYTES) -> str | None:
    """A non-empty identifier argument of at most ``limit`` bytes (IDENTIFIER_BYTES, or
    NAME_BYTES for a name graphmem prefixes: ``by``, a method)."""
    if value is None and optional:
        return None
    if isinstance(value, str) and not value:
        raise InputError(where, "must be a non-empty string")
    return check_text(where, value, limit)


def check_ids(where: str, values: Any, most: int = IDS_PER_CALL) -> list[str]:
    """A list of identifiers (not a single string), at most ``most`` of them."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sized):
        raise InputError(where, f"a list of ids is required, got {type(values).__name__}")
    check_count(where, len(values), most)
    return [check_id(f"{where}[{i}]", v) for i, v in enumerate(values)]  # type: ignore[misc]


def check_count(where: str, count: int, most: int) -> None:
    if count > most:
        raise InputError(where, f"{count:,} items; at most {most:,} in one call")


REPEATS = 10
"""How many times a bound on distinct items (cutoffs, frames, entities) the items given may
number: the distinct are counted as they come, so without a bound of their own an endless
iterator repeating one value would be read forever."""


def given(where: str, items: Iterable[Any], distinct: int) -> Iterator[tuple[int, Any]]:
    """``enumerate(items)``, refused (InputError naming ``where``) past ``REPEATS`` times
    ``distinct`` items, whatever the caller's bound on the distinct ones finds."""
    for n, item in enumerate(items):
        if n >= REPEATS * distinct:
            raise InputError(where, f"more than {REPEATS * distinct:,} items given (at most {distinct:,} distinct)")
        yield n, item


def check_int(where: str, value: Any, low: int, high: int, *, optional: bool = False
              ) -> int | None:
    """An integer (not a bool) in [low, high]."""
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InputError(where, f"must be an integer from {low:,} to {high:,}, got {shown(value)}")
    return value


def shown(value: Any) -> str:
    """A refused value as an error message shows it: shortened (reprlib), and an integer
    too long for Python's text (past 4,300 digits, whose repr() raises a ValueError of its
    own) by its size."""
    try:
        return reprlib.repr(value)
    except ValueError:
        return f"an integer of {value.bit_length():,} bits"
