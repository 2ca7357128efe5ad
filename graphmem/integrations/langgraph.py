"""graphmem as LangGraph's long-term memory: ``GraphmemStore`` implements
``langgraph.store.base.BaseStore`` and keeps time, provenance and scope.

Install with ``pip install graphmem[langgraph]``::

    store = GraphmemStore(Memory.from_env(), tenant="acme")
    graph = builder.compile(store=store)          # nodes get it as `store`
    store.put(("memories", "alice"), "food", {"likes": "pizza"})
    store.search(("memories", "alice"), query="pizza", filter={"likes": {"$ne": "kale"}})
    past = store.as_of(cutoff=yesterday)          # the same interface, read-only, at that time

**The mapping.** A store is fixed to one tenant when it is made; a namespace is a scope of
that tenant, and an item is one fact key in it::

    namespace ("memories", "alice") -> Scope(tenant, **scope, namespace="memories.alice")
                                       (with labels=("kind", "user"): kind="memories", user="alice" too)
    item (namespace, key, value)    -> fact  entity     "langgraph:memories.alice" (the namespace,
                                                        recorded as an Entity of kind "namespace")
                                             attribute  the key
                                             value      the value as canonical JSON text
                                                        (sorted keys, no spaces)
                                             period     0001-01-01 (an item has no valid time)
                                             definition "langgraph item (JSON)"

Labels never contain a period (LangGraph refuses them), so the dotted path names a
namespace exactly and two namespaces never share a scope.

**Why a fact.** A fact key already has every semantics an item needs: each ``put`` is an
immutable version evidenced by its own source (kind ``langgraph.put``, authority
``primary``, publisher ``langgraph``, ``available_by`` = the put's transaction time), so a
later put supersedes an earlier one (the same publisher, later) and history is kept; a
put of the value the item already has adds evidence instead of a version. Because an
item is public the moment it is recorded, the read rule at (cutoff, known_at) gives the
store as it stood at any moment. ``delete`` invalidates every version of the key not yet
invalidated, in one transaction: from then on the item is gone for every cutoff, and
reads with ``known_at`` before the delete still see it (invalidating only the latest
version would bring the one before it back). The namespace is a graphmem scope, so no
read of one namespace sees another's items and a deployment's required scope keys fail
closed; ``erase`` forgets a namespace's payloads, history included. The value is in
graphmem's full-text index, so ``search`` is graphmem's search. An experience needs an
observed outcome and validating evidence, and a task state has fixed fields and no
invalidation: neither carries an arbitrary document. A new memory type would need a
read rule of its own.

**Reads.** The store reads the present with no publication cutoff at the read's own
transaction time; ``as_of(cutoff=, known_at=)`` returns a read-only view at that moment
(``known_at`` defaults to ``cutoff``: the store exactly as it stood then; pass
``known_at=now`` for what was public by the cutoff with every later delete applied).
``Item.created_at`` is when the item's current value was first put (its version's
``available_by``), ``updated_at`` the latest put of that value (its latest evidence).

**Search.** Without a query: every item under the prefix that passes the hard filters
(scope, time, status), newest ``updated_at`` first (then namespace, key). With a query:
graphmem's search (``match="any"``: plain words optional, identifiers required), best
text score first; a query of stop words only is treated as no query. ``filter`` is then
applied to the values (``{"field": value}`` for equality, or the operators ``$eq``,
``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``; range operators compare two numbers, or
two strings; a missing field matches only ``$ne``), and only then ``offset`` and
``limit``. A prefix that covers several namespaces is searched namespace by namespace
(one read each, after one read that lists them). ``SearchItem.score`` is the full-text
score (None without a query).

The full-text index holds what graphmem indexes for every fact version, not only an
item's key and value: the namespace's entity (id ``langgraph:`` and the labels joined by
``.``, kind ``namespace``, name the labels joined by `` / ``), the definition
``langgraph item (JSON)``, the period ``0001-01-01`` and each put's source (id
``langgraph-put:<batch>:<n>``, kind ``langgraph.put``, publisher ``langgraph``; a put of
an unchanged value adds its source's words again). So a query word among those
(``langgraph``, ``item``, ``json``, ``namespace``, ``0001``, one of the namespace's
labels; ``put`` through some source ids) matches items whose key and value do not hold
it, and those words weigh in every item's text score. The store cannot narrow that: the
index holds the whole text in one field, through Lucene's english analyzer; only graphmem
indexing an item's key and value apart could.

**Bounds** (checked before any query; InputError otherwise): at most 16 namespace labels,
whose graphmem scope (the tenant, the store's scope keys, the named labels and the
dotted path, as JSON) fits ``graphmem.limits.SCOPE_BYTES``, 2,048 bytes in UTF-8 (a
dotted path of about 2,000 bytes with a short tenant and no other scope key; refused as
``namespace``, and a prefix that no namespace can have as ``namespace_prefix`` or
``match_conditions``); a key of 1 to 2,048 bytes in UTF-8 (it is a fact attribute:
``graphmem.limits.IDENTIFIER_BYTES``); a value of at most 64 KiB of JSON in UTF-8 (65,536
bytes: the value is stored as a text fact value, whose bound is
``graphmem.limits.TEXT_BYTES``), nested at most 64 deep, with string keys, finite
numbers and integers of at most 4,300 digits (what Python writes as JSON text and reads
back); ``limit`` 1-1,000, ``offset`` 0-100,000; a query of at most 1,000 characters
(without an ``index``, at most 256 words that are not stop words:
``graphmem.limits.SEARCH_TERMS``, one Lucene clause each), ranked over its best 1,000
matches per namespace; at most 1,000 operations per batch; a store's ``labels`` at most 16
names, each an identifier (a tuple: a string is refused, not taken letter by letter); a ``list_namespaces``
``max_depth`` None or 1 or more; the fields to embed (the index's ``fields``, a put's
``index``) a list of paths.
Tuples come back as lists, as from any JSON store.

**Semantic search.** ``GraphmemStore(memory, tenant=..., index={"dims": 384, "embed":
fn, "fields": ["text"]})`` takes LangGraph's own index configuration: each put embeds
the value's fields (``"$"``, the default, is the whole value, as the full-text index
holds it: on LoCoMo MiniLM alone finds 54.5% of the evidence so, 26.6% from the text
field alone, the speaker and date being what questions name - docs/PERFORMANCE.md;
``put(..., index=[...])`` other fields, ``index=False`` none) and stores the vectors on
the item's version; a search with a query then ranks by cosine similarity (the best of
an item's fields) among the items that pass graphmem's filters (scope, time, status:
graphmem/retrieval), and ``SearchItem.score`` is the cosine. Items with no vector come
after the scored ones, with score None, as in ``InMemoryStore``. The order and the cut
are both by cosine: graphmem's own ranking puts an item holding one of the query's
identifiers first, so the store reads as many of its hits as a page needs to hold the
best cosines (up to 1,000 per namespace, graphmem's search limit). ``as_of`` views search
by meaning too. The embedder's name (its qualified name, or ``index["name"]``) and
``dims`` are recorded per namespace; another embedder is refused (InputError).

Differences from ``InMemoryStore``: ``list_namespaces`` lists only namespaces that hold
an item (``InMemoryStore`` also lists those that were only read, or whose items were all
deleted); listings are ordered by ``updated_at``, not by insertion; TTLs are not
supported; fields to embed given as a string are refused (``InMemoryStore`` takes
its letters for fields). A search's pages are slices of one order, unscored items included
(``InMemoryStore`` starts every page's unscored items from the first one, whatever the
offset). A re-put's vectors are those of the new value only: ``InMemoryStore`` keeps
the vector of a field that the new value no longer has (or of every field, when
re-put with ``index=False``) and goes on scoring the item by its old text.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from .. import facts, lineage
from .. import search as searching
from ..db import Tx
from ..errors import GraphmemError, InputError
from ..limits import (
    IDENTIFIER_BYTES,
    SCOPE_BYTES,
    SEARCH_LIMIT,
    SEARCH_TERMS,
    TEXT_BYTES,
    check_id,
    shown,
    utf8_problem,
)
from ..memory import Memory
from ..models import Answer, Authority, Entity, FactIn, FactVersion, Period, Scope, Source
from ..retrieval import Embedder, store
from ..values import aware_utc

PERIOD = Period(end=dt.date(1, 1, 1))
DEFINITION = "langgraph item (JSON)"
ENTITY_PREFIX = "langgraph:"
PUBLISHER = "langgraph"
SOURCE_KIND = "langgraph.put"
FAR = dt.datetime(9999, 12, 31, tzinfo=dt.UTC)  # the present: no publication cutoff

MAX_LABELS, MAX_KEY_BYTES = 16, IDENTIFIER_BYTES  # the key is a fact attribute
MAX_VALUE_BYTES, MAX_DEPTH = TEXT_BYTES, 64  # the value is a text fact value
MAX_LIMIT, MAX_OFFSET, MAX_QUERY, MAX_BATCH = 1000, 100_000, 1000, 1000
MAX_INT_DIGITS = 4300  # sys.int_info.default_max_str_digits: what Python writes as text and reads back
_INT_BOUND = 10**MAX_INT_DIGITS
RANGE_OPERATORS = {"$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
                   "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


class ConflictedItemError(GraphmemError):
    """An item whose key reads as a conflict (only writes outside the store can make one):
    the store never picks one value silently."""

    def __init__(self, namespace: tuple[str, ...], key: str, version_ids: Sequence[str]):
        super().__init__(f"item {namespace}/{key!r} is conflicted between versions "
                         f"{', '.join(version_ids)}; resolve it with Memory.resolve")
        self.version_ids = tuple(version_ids)


class ItemVersion(NamedTuple):
    """One stored version of an item, on both time axes (``GraphmemStore.history``)."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None  # None once erased
    version_id: str
    created_at: dt.datetime  # when this value was first put (available_by)
    updated_at: dt.datetime  # the latest put of this value
    recorded_at: dt.datetime
    deleted_at: dt.datetime | None  # the invalidation that a delete recorded
    erased: bool


# ---------------------------------------------------------------- checks and encoding


def _labels(namespace: Any, where: str, *, empty: bool) -> tuple[str, ...]:
    if not isinstance(namespace, tuple | list):
        raise InputError(where, f"a tuple of strings is required, got {type(namespace).__name__}")
    if not namespace and not empty:
        raise InputError(where, "a namespace has at least one label")
    if len(namespace) > MAX_LABELS:
        raise InputError(where, f"at most {MAX_LABELS} labels, got {len(namespace)}")
    for label in namespace:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InputError(where, f"label {label!r}: a non-empty string without '.' or NUL")
        _utf8(label, where)
    return tuple(namespace)


def _key(key: Any) -> str:
    """A key: a fact attribute, so graphmem's bound on an identifier is the key's."""
    if not isinstance(key, str) or not key:
        raise InputError("key", "a non-empty string is required")
    size = len(_utf8(key, "key"))
    if size > MAX_KEY_BYTES:
        raise InputError("key", f"{size:,} bytes in UTF-8; at most {MAX_KEY_BYTES:,} (a key is a "
                                "graphmem fact attribute)")
    return key


def _check_json(value: Any, where: str, depth: int = 0) -> None:
    """Refuse what would not come back equal from JSON: non-string keys, non-finite
    numbers, other types."""
    if depth > MAX_DEPTH:
        raise InputError(where, f"nested deeper than {MAX_DEPTH}")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InputError(where, f"key {k!r}: object keys must be strings")
            _check_json(v, f"{where}[{k!r}]", depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _check_json(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise InputError(where, "numbers must be finite")
    elif isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _INT_BOUND:
        # json.dumps would fail with a bare ValueError; a process whose limit was raised
        # would store text that every other process fails to read back
        raise InputError(where, f"an integer of more than {MAX_INT_DIGITS:,} digits (Python writes "
                                "and reads no longer one as JSON text)")
    elif not (value is None or isinstance(value, str | int | float)):
        raise InputError(where, f"{type(value).__name__} is not a JSON value")


def encode(value: Any) -> str:
    """An item's value as canonical JSON text: equal values give equal text."""
    if not isinstance(value, Mapping):
        raise InputError("value", f"a mapping is required, got {type(value).__name__}")
    value = dict(value)
    _check_json(value, "value")
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    size = len(_utf8(text, "value"))
    if size > MAX_VALUE_BYTES:
        raise InputError("value", f"{size:,} bytes of JSON in UTF-8; at most {MAX_VALUE_BYTES:,}")
    return text


def _utf8(text: str, where: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise InputError(where, "not valid Unicode (a lone surrogate)") from exc


def _page(limit: Any, offset: Any) -> None:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InputError("limit", f"an integer from 1 to {MAX_LIMIT} is required")
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise InputError("offset", f"an integer from 0 to {MAX_OFFSET} is required")


def _label_names(labels: Any) -> tuple[str, ...]:
    """A store's ``labels``: the scope key names of a namespace's leading labels. A single
    string would be taken letter by letter, a name that is not an identifier would be a
    scope key no namespace can fill, and more names than a namespace's labels would refuse
    every namespace."""
    if isinstance(labels, str) or not isinstance(labels, Iterable):
        raise InputError("labels", f"a tuple of scope key names is required, got {type(labels).__name__}")
    names = tuple(labels)
    if len(names) > MAX_LABELS:
        raise InputError("labels", f"at most {MAX_LABELS} (a namespace's labels), got {len(names)}")
    for n, name in enumerate(names):
        check_id(f"labels[{n}]", name)
    return names


def _fixed_scope(scope: Any) -> dict[str, str]:
    """A store's ``scope``: fixed scope keys, a mapping with string keys (the values are
    the Scope's to check)."""
    if scope is None:
        return {}
    if not isinstance(scope, Mapping):
        raise InputError("scope", f"a mapping of scope keys to values is required, got {type(scope).__name__}")
    fixed = dict(scope)
    for key in fixed:
        if not isinstance(key, str):
            raise InputError("scope", f"key {key!r}: scope keys must be strings")
    return fixed


def _depth(max_depth: Any) -> None:
    """``list_namespaces``' ``max_depth``: None, or how many leading labels to keep (1 or
    more; past a namespace's labels it cuts nothing). 0 or less would answer namespaces
    that hold nothing (``()``, each namespace without its last label)."""
    if max_depth is not None and (not isinstance(max_depth, int) or isinstance(max_depth, bool)
                                  or max_depth < 1):
        raise InputError("max_depth", f"None or an integer of 1 or more is required, got {max_depth!r}")


# ---------------------------------------------------------------- filters


def _check_filter(flt: Any) -> None:
    if flt is None:
        return
    if not isinstance(flt, Mapping):
        raise InputError("filter", "a mapping of value fields to values or operators")
    for field, cond in flt.items():
        if isinstance(cond, Mapping) and any(str(k).startswith("$") for k in cond):
            bad = [k for k in cond if k not in ("$eq", "$ne", *RANGE_OPERATORS)]
            if bad:
                raise InputError(f"filter[{field!r}]", f"unknown operator {bad[0]!r}; use $eq, $ne, "
                                                       "$gt, $gte, $lt or $lte")


def _ordered(a: Any, b: Any) -> bool:
    """Two numbers (not booleans), or two strings: the values a range operator compares."""
    numbers = (isinstance(a, int | float) and not isinstance(a, bool)
               and isinstance(b, int | float) and not isinstance(b, bool))
    return numbers or (isinstance(a, str) and isinstance(b, str))


def _holds(value: Any, cond: Any) -> bool:
    """One field's condition, as LangGraph's stores define it (nested objects compare
    field by field, lists element by element)."""
    if isinstance(cond, Mapping):
        if any(str(k).startswith("$") for k in cond):
            return all(
                (value == operand if op == "$eq" else value != operand if op == "$ne"
                 else _ordered(value, operand) and RANGE_OPERATORS[op](value, operand))
                for op, operand in cond.items())
        return isinstance(value, Mapping) and all(_holds(value.get(k), c) for k, c in cond.items())
    if isinstance(cond, list | tuple):
        return (isinstance(value, list | tuple) and len(value) == len(cond)
                and all(_holds(v, c) for v, c in zip(value, cond, strict=True)))
    return value == cond


def matches(value: Mapping[str, Any], flt: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search's ``filter``."""
    return not flt or all(_holds(value.get(field), cond) for field, cond in flt.items())


def _literal(conditions: Sequence[MatchCondition]) -> tuple[str, ...]:
    """The labels that ``list_namespaces``' prefix condition fixes (those before its first
    "*"), every condition's labels checked."""
    literal: tuple[str, ...] = ()
    for c in conditions:
        _labels([p for p in c.path if p != "*"], "match_conditions", empty=True)
        if c.match_type == "prefix":
            literal = tuple(c.path[:c.path.index("*")] if "*" in c.path else c.path)
    return literal


def _namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[:len(path)] if condition.match_type == "prefix" else namespace[-len(path):]
    return all(p in ("*", n) for n, p in zip(part, path, strict=True)) if path else True


# ---------------------------------------------------------------- the store


class GraphmemStore(BaseStore):
    """A LangGraph ``BaseStore`` on graphmem (see the module docstring for the mapping).

    ``tenant`` is fixed for the store's life; ``scope`` adds fixed scope keys to every
    namespace's scope; ``labels`` names the leading namespace labels as scope keys too
    (a namespace with fewer labels is refused), so a deployment that requires a scope key
    (``Memory(required_scope=("user",))``) gets it from the namespace.
    """

    def __init__(self, memory: Memory, *, tenant: str, scope: Mapping[str, str] | None = None,
                 labels: Sequence[str] = (), index: IndexConfig | None = None):
        fixed, labels = _fixed_scope(scope), _label_names(labels)
        reserved = {"tenant", "namespace"}
        clash = (reserved | set(labels)) & set(fixed) or reserved & set(labels)
        if clash or len(set(labels)) != len(labels):
            raise InputError("scope", f"scope keys and labels must be distinct and not "
                                      f"'tenant' or 'namespace'; got {sorted(clash) or list(labels)}")
        try:
            Scope(tenant=tenant, **fixed)
        except InputError as exc:  # Scope.tenant, or the scope's keys (named Scope)
            raise InputError("tenant" if exc.where.endswith("tenant") else "scope", exc.reason) from exc
        self._mem, self._tenant, self._fixed, self._names = memory, tenant, fixed, tuple(labels)
        self._cutoff: dt.datetime | None = None
        self._known_at: dt.datetime | None = None
        self._index = index
        self._embedder = _embedder(index) if index else None
        self._claimed: set[str] = set()  # scopes whose embedder this store has checked

    # ------------------------------------------------------------ time

    @property
    def read_only(self) -> bool:
        """True for a view made by :meth:`as_of`."""
        return self._cutoff is not None

    def as_of(self, *, cutoff: dt.datetime, known_at: dt.datetime | None = None) -> GraphmemStore:
        """A read-only view of this store at ``cutoff`` as recorded by ``known_at``
        (default: ``cutoff``, the store exactly as it stood then)."""
        cutoff = aware_utc("cutoff", cutoff)  # a time outside the years 1 to 9999 in UTC: by name
        view = GraphmemStore(self._mem, tenant=self._tenant, scope=self._fixed, labels=self._names,
                             index=self._index)
        view._cutoff = cutoff
        view._known_at = cutoff if known_at is None else aware_utc("known_at", known_at)
        return view

    # ------------------------------------------------------------ mapping

    def scope_of(self, namespace: tuple[str, ...]) -> Scope:
        """The graphmem scope a namespace maps to (checked against the memory's required keys)."""
        namespace = _labels(namespace, "namespace", empty=False)
        if len(namespace) < len(self._names):
            raise InputError("namespace", f"{namespace} has fewer labels than the store names: "
                                          f"{', '.join(self._names)}")
        self._fits(namespace, "namespace")
        return self._mem.scope(Scope(tenant=self._tenant, **self._keys(namespace)))

    def _keys(self, namespace: tuple[str, ...]) -> dict[str, str]:
        """The scope keys beside the tenant that a namespace (or a prefix of one) maps to."""
        return {**self._fixed, **dict(zip(self._names, namespace, strict=False)),
                "namespace": ".".join(namespace)}

    def _fits(self, namespace: tuple[str, ...], where: str) -> None:
        """Refuse, naming it, a namespace whose graphmem scope would be over graphmem's bound
        on a scope (the real bound on a namespace: it depends on the tenant, the fixed scope
        keys and which labels are named). A prefix that does not fit has no namespace under
        it: more labels only lengthen the scope."""
        scope = Scope.model_construct(tenant=self._tenant, **self._keys(namespace))  # measured only
        problem = utf8_problem(scope.id, SCOPE_BYTES)
        if problem:
            raise InputError(where, f"its graphmem scope (the tenant, the scope keys and the labels, "
                                    f"as JSON) is {problem}")

    @staticmethod
    def _entity(namespace: tuple[str, ...]) -> str:
        return ENTITY_PREFIX + ".".join(namespace)

    entity_of = _entity  # the entity a namespace's items are facts about

    @property
    def embedder(self) -> Embedder | None:
        """The embedder made from ``index`` (None without one)."""
        return self._embedder

    # ------------------------------------------------------------ BaseStore

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run operations in order: reads first see the state before this batch's writes
        (as in LangGraph's own stores); all writes then commit in ONE transaction, the
        last write to an item winning."""
        ops = list(ops)
        if len(ops) > MAX_BATCH:
            raise InputError("ops", f"at most {MAX_BATCH} operations per batch, got {len(ops)}")
        writes: dict[tuple[tuple[str, ...], str], tuple[Scope, str, str | None]] = {}
        for op in ops:  # every check before any query
            if isinstance(op, PutOp):
                if self.read_only:
                    raise InputError("put" if op.value is not None else "delete",
                                     f"read-only view as of {self._cutoff.isoformat()}: "
                                     "write through the store itself")
                if op.namespace and op.namespace[0] == "langgraph":
                    raise InputError("namespace", "the root label 'langgraph' is reserved")
                key = _key(op.key)
                text = None if op.value is None else encode(op.value)
                writes.pop((tuple(op.namespace), key), None)  # the last write goes last
                writes[(tuple(op.namespace), key)] = (self.scope_of(op.namespace), key, text,
                                                      self._texts(op))
            elif isinstance(op, GetOp):
                self.scope_of(op.namespace)
                _key(op.key)
            elif isinstance(op, SearchOp):
                self._fits(_labels(op.namespace_prefix, "namespace_prefix", empty=True), "namespace_prefix")
                _page(op.limit, op.offset)
                _check_filter(op.filter)
                self._check_query(op.query)
            elif isinstance(op, ListNamespacesOp):
                _page(op.limit, op.offset)
                _depth(op.max_depth)
                self._fits(_literal(op.match_conditions or ()), "match_conditions")
            else:
                raise InputError("ops", f"unknown operation {type(op).__name__}")
        results = [None if isinstance(op, PutOp) else self._read(op) for op in ops]
        if writes:
            claims = self._claims(list(writes.values()))
            self._write(self._embedded(list(writes.values())), claims)
            self._claimed.update(claims)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread (the driver is synchronous)."""
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    def _check_query(self, query: Any) -> None:
        """A search's query within the store's bounds: the full-text search (no ``index``)
        takes at most graphmem's number of searchable words, so a longer query is refused
        here rather than becoming no query."""
        if query is None:
            return
        if not isinstance(query, str) or len(query) > MAX_QUERY:
            raise InputError("query", f"a string of at most {MAX_QUERY} characters")
        _utf8(query, "query")  # a lone surrogate: refused by graphmem's search as `text`, and only once it ran
        words = _searchable(query) if self._embedder is None else 0
        if words > SEARCH_TERMS:
            raise InputError("query", f"{words:,} searchable words (stop words aside); at most "
                                      f"{SEARCH_TERMS} for a full-text search")

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(tuple(op.namespace), op.key)
        if isinstance(op, SearchOp):
            return self._search(op)
        assert isinstance(op, ListNamespacesOp)
        return self._list_namespaces(op)

    # ------------------------------------------------------------ reads

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        answer = self._mem.as_of(self.scope_of(namespace), entity=self._entity(namespace),
                                 attribute=key, period=PERIOD, unit="", definition=DEFINITION,
                                 cutoff=self._cutoff or FAR, known_at=self._known_at)
        return _item(namespace, key, answer)

    def _namespaces(self, prefix: tuple[str, ...], *, live: bool = True) -> list[tuple[str, ...]]:
        """The namespaces under a literal prefix that hold an item now (or at the view's
        time); with ``live=False``, every one that ever held one."""
        params = {"tenant": self._tenant, "prefix": self._entity(prefix), "definition": DEFINITION,
                  "period": PERIOD.text}
        if live:
            rows = self._mem.db.read_all("langgraph.namespaces", **params,
                                         times=[self._cutoff or FAR, self._known_at])
        else:
            rows = self._mem.db.read_all("langgraph.namespaces_ever", **params)
        found = []
        for row in rows:
            namespace = tuple(row["entity"].removeprefix(ENTITY_PREFIX).split("."))
            if namespace[:len(prefix)] != prefix:  # "a.bc" starts with "a.b" too
                continue
            try:
                if self.scope_of(namespace).id == row["scope"]:  # this store's mapping
                    found.append(namespace)
            except InputError:  # a namespace another mapping wrote
                continue
        return found

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        namespaces = self._namespaces(prefix, live=False)  # each read below applies the rule
        # without a filter the page needs only each namespace's best offset + limit hits
        depth = MAX_LIMIT if op.filter else min(MAX_LIMIT, op.offset + op.limit)
        if op.query and self._embedder:
            found = self._similar(namespaces, op.query, depth)
        elif op.query and _searchable(op.query):
            found = self._ranked(namespaces, op.query, depth)
        else:  # no query, or stop words only
            found = [item for ns in namespaces for item in self._listed(ns)]
            found.sort(key=lambda i: (-i.updated_at.timestamp(), i.namespace, i.key))
        kept = [item for item in found if matches(item.value, op.filter)]
        return kept[op.offset:op.offset + op.limit]

    def _listed(self, namespace: tuple[str, ...]) -> list[SearchItem]:
        answers = self._mem.facts_as_of(self.scope_of(namespace), entity=self._entity(namespace),
                                        cutoff=self._cutoff or FAR, known_at=self._known_at)
        return [_item(namespace, a.attribute, a, search=True) for a in answers if _ours(a)]

    def _ranked(self, namespaces: list[tuple[str, ...]], query: str, depth: int
                ) -> list[SearchItem]:
        """Query hits of every namespace, best text score first (the query has a
        searchable word: ``_check_query`` and ``_search`` saw to it)."""
        found = [item for namespace in namespaces for item in self._matching(namespace, query, depth)]
        found.sort(key=lambda i: (-(i.score or 0.0), -i.updated_at.timestamp(), i.namespace, i.key))
        return found

    def _matching(self, namespace: tuple[str, ...], query: str, depth: int) -> list[SearchItem]:
        """Hits of graphmem's full-text search that hold the namespace's best ``depth``
        items in the store's order (text score, then ``updated_at``, then key).

        graphmem breaks a tie of text scores by its own recency and then its key uids, so
        its best ``depth`` hits need not be the store's best ``depth`` when scores tie at the
        cut (items put in one batch with one text): a page would then repeat one item and
        never show another. So the search asks for more hits until ``depth`` of them score
        above the last one (every hit left out scores at most that), or none was left out;
        at graphmem's limit of hits (``SEARCH_LIMIT``) it takes those."""
        scope, asked = self.scope_of(namespace), min(SEARCH_LIMIT, depth + 1)
        while True:
            hits = self._mem.search(scope, text=query, types=("fact",), entity=self._entity(namespace),
                                    cutoff=self._cutoff, known_at=self._known_at, limit=asked,
                                    match="any").hits
            items = [_item(namespace, h.answer.attribute, h.answer, search=True, score=h.rank.text_score)
                     for h in hits if h.answer is not None and _ours(h.answer)]
            if len(hits) < asked or asked == SEARCH_LIMIT:
                return items
            bound = hits[-1].rank.text_score
            if sum(i.score is not None and i.score > bound for i in items) >= depth:
                return items
            asked = min(SEARCH_LIMIT, 8 * asked)

    def _similar(self, namespaces: list[tuple[str, ...]], query: str, depth: int
                 ) -> list[SearchItem]:
        """Query hits of every namespace by meaning, best cosine first, items without a
        vector last (score None): each namespace's best ``depth`` by that order."""
        found = [item for namespace in namespaces for item in self._nearest(namespace, query, depth)]
        found.sort(key=lambda i: (i.score is None, -(i.score or 0.0), -i.updated_at.timestamp(),
                                  i.namespace, i.key))
        return found

    def _nearest(self, namespace: tuple[str, ...], query: str, depth: int) -> list[SearchItem]:
        """Hits of graphmem's semantic search (its filters first) that hold the namespace's
        best ``depth`` items by cosine alone, as ``InMemoryStore`` ranks them.

        graphmem ranks an item holding one of the query's identifiers before any that does
        not (graphmem/retrieval/rank.py), then by cosine, then by its own recency: its best
        ``depth`` hits are not the best ``depth`` cosines, and a page cut from them would
        not be a page of the store's order. So the search asks for more hits until they hold
        that page: when ``depth`` of them score above every hit left out (those rank after
        the last one: when it holds no identifier, none does, and none has a higher cosine),
        or when none was left out. At graphmem's limit of hits (``SEARCH_LIMIT``) it takes
        those."""
        scope, asked = self.scope_of(namespace), min(SEARCH_LIMIT, 2 * depth)
        while True:
            hits = self._mem.search(scope, text=query, types=("fact",), entity=self._entity(namespace),
                                    cutoff=self._cutoff, known_at=self._known_at, limit=asked,
                                    mode="semantic", embedder=self._embedder, unembedded="last").hits
            items = [_item(namespace, h.answer.attribute, h.answer, search=True,
                           score=_cosine(h.rank.semantic_score))
                     for h in hits if h.answer is not None and _ours(h.answer)]
            if len(hits) < asked or asked == SEARCH_LIMIT:
                return items
            last = hits[-1].rank  # a hit left out scores at most its cosine (-1: it has no vector)
            bound = -1.0 if last.semantic_score is None else _cosine(last.semantic_score)
            if not last.identifiers and sum(i.score is not None and i.score > bound for i in items) >= depth:
                return items
            asked = min(SEARCH_LIMIT, 8 * asked)

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        namespaces = [ns for ns in self._namespaces(_literal(conditions))
                      if all(_namespace_matches(ns, c) for c in conditions)]
        if op.max_depth is not None:
            namespaces = list({ns[:op.max_depth] for ns in namespaces})
        return sorted(namespaces)[op.offset:op.offset + op.limit]

    def history(self, namespace: tuple[str, ...], key: str) -> list[ItemVersion]:
        """Every version an item ever had, oldest first, with both time axes and deletes."""
        versions = self._mem.history(self.scope_of(namespace), entity=self._entity(namespace),
                                     attribute=_key(key), period=PERIOD)
        return [_version(namespace, key, v) for v in versions if v.definition == DEFINITION]

    # ------------------------------------------------------------ writes

    def _texts(self, op: PutOp) -> list[str] | None:
        """The texts a put embeds (None: the store has no index, or nothing to embed)."""
        if self._embedder is None or op.value is None:
            return None
        return _field_texts(op.value, self._fields if op.index is None else
                            [] if op.index is False else _paths(op.index))

    @property
    def _fields(self) -> list[str]:
        return list((self._index or {}).get("fields") or ["$"])

    def _embedded(self, writes: list[tuple[Scope, str, str | None, list[str] | None]]
                  ) -> list[tuple[Scope, str, str | None, list[float] | None]]:
        """Each put's texts as one concatenated vector list, embedded before the write
        transaction (a model call never holds the tenant's lock)."""
        if self._embedder is None:
            return [(scope, key, text, None) for scope, key, text, _ in writes]
        flat = self._embedder.documents([t for w in writes for t in (w[3] or [])])
        out, i = [], 0
        for scope, key, text, texts in writes:
            n = len(texts or [])
            out.append((scope, key, text, None if texts is None else [x for v in flat[i:i + n] for x in v]))
            i += n
        return out

    def _claims(self, writes: list[tuple[Scope, str, str | None, list[str] | None]]
                ) -> dict[str, tuple[Scope, list[float]]]:
        """The scopes whose embedder this batch's vectors claim, each checked against the
        one its vectors were made with (InputError on a mismatch), by scope id with the
        embedder's probe vector. Reading only: the claims are written with the batch
        (``_write``), so a batch refused as a whole leaves no namespace claimed."""
        if self._embedder is None:
            return {}
        scopes = {w[0].id: w[0] for w in writes if w[3] is not None and w[0].id not in self._claimed}
        return {sid: (scope, store.checked(self._mem, scope, self._embedder)) for sid, scope in scopes.items()}

    def _write(self, writes: list[tuple[Scope, str, str | None, list[float] | None]],
               claims: dict[str, tuple[Scope, list[float]]]) -> None:
        """All of a batch's puts and deletes in one write transaction, with its embedder
        claims.

        Source ids are chosen once per batch, outside the transaction: a retry after a
        commit whose acknowledgement was lost finds its first put's source and records
        nothing twice."""
        batch = uuid.uuid4().hex
        sources = [f"langgraph-put:{batch}:{i}" for i in range(len(writes))]

        def work(tx: Tx, at: Any) -> None:
            puts = [(w, s) for w, s in zip(writes, sources, strict=True) if w[2] is not None]
            if puts and tx.run("source.get_many", uids=[facts.source_uid(puts[0][0][0], puts[0][1])],
                               **facts.scope_params(puts[0][0][0])):
                return  # this batch already committed
            for scope, probe in claims.values():
                assert self._embedder is not None
                store.claim_in(tx, scope, self._embedder, probe, at)
            for (scope, key, text, vector), source_id in zip(writes, sources, strict=True):
                if text is None:
                    self._delete(tx, scope, key, at)
                else:
                    self._put(tx, scope, key, text, source_id, at, vector)

        self._mem.write(writes[0][0], "langgraph.batch", work)

    def _put(self, tx: Tx, scope: Scope, key: str, text: str, source_id: str, at: Any,
             vector: list[float] | None) -> None:
        namespace = tuple(scope.keys()["namespace"].split("."))
        entity = self._entity(namespace)
        facts.put_entity(tx, scope, Entity(id=entity, name=" / ".join(namespace), kind="namespace"), at)
        facts.record_source(tx, scope, Source(id=source_id, kind=SOURCE_KIND, authority=Authority.PRIMARY,
                                              publisher=PUBLISHER, available_by=facts.native(at)), at)
        written = facts.write_facts(tx, scope, [FactIn(entity=entity, attribute=key, value=text, period=PERIOD,
                                                       definition=DEFINITION, sources=(source_id,))], at)
        if vector is not None and self._embedder is not None:
            assert written.version_ids
            tx.run("retrieval.set_vectors", name=self._embedder.name, **facts.scope_params(scope),
                   rows=[{"id": written.version_ids[0], "fact": True, "vector": vector}])

    def _delete(self, tx: Tx, scope: Scope, key: str, at: Any) -> None:
        namespace = tuple(scope.keys()["namespace"].split("."))
        rows = tx.run("fact.history", entity=self._entity(namespace), attribute=key,
                      period=PERIOD.text, **facts.scope_params(scope))
        if rows:
            lineage.invalidate(tx, scope, [r["version_id"] for r in rows],
                               reason="deleted through the LangGraph store", by=PUBLISHER, at=at)

    def erase(self, namespace: tuple[str, ...], *, reason: str) -> int:
        """Forget a namespace: every item's payload, history included (graphmem's erase of
        the namespace's entity); returns how many versions were erased. An erased
        namespace takes no new puts: graphmem never brings an erased entity back."""
        if self.read_only:
            raise InputError("erase", "read-only view: erase through the store itself")
        return self._mem.erase(self.scope_of(namespace), entity=self._entity(tuple(namespace)),
                               reason=reason, by=PUBLISHER)


# ---------------------------------------------------------------- answers to items


def _field_texts(value: Mapping[str, Any], fields: Sequence[str]) -> list[str]:
    """The texts of a value's fields, as LangGraph's own stores extract them."""
    return [t for f in fields for t in get_text_at_path(value, f if f == "$" else tokenize_path(f))]


def _embedder(index: IndexConfig) -> Embedder:
    """LangGraph's ``index`` as a graphmem Embedder: ``embed`` (an Embeddings object, a
    sync or async function, or a provider string), ``dims``, ``fields``; the name is
    ``index["name"]`` if given, else the provider string or the function's name.

    Only a provider string goes through LangGraph's ``ensure_embeddings``: the Embedder
    takes an Embeddings object or a function itself, and awaits an async one (LangGraph's
    wrapper of an async function has no synchronous call, which the store makes)."""
    if not isinstance(index, Mapping) or "embed" not in index or "dims" not in index:
        raise InputError("index", 'LangGraph\'s index configuration: {"dims": int, "embed": ..., '
                                  '"fields": [...]}')
    embed = index["embed"]
    name = index.get("name") or (embed if isinstance(embed, str) else getattr(
        embed, "__qualname__", type(embed).__name__))
    fields = _paths(index.get("fields") or ["$"])
    return Embedder(ensure_embeddings(embed) if isinstance(embed, str) else embed,
                    name=f"langgraph:{name}", dims=index["dims"],
                    text_of=lambda row: _field_texts(json.loads(row["value"]), fields))


def _paths(fields: Any) -> list[str]:
    """Fields to embed (the index's, or a put's): a list of paths, ``"$"`` the whole value.
    A string would be taken letter by letter ("text": t, e, x, t) and a number fails in
    LangGraph's path parser, at every put."""
    if isinstance(fields, str) or not isinstance(fields, list | tuple) or not all(
            isinstance(f, str) and f for f in fields):
        raise InputError("index", f'the fields to embed are a list of paths such as ["text"] or ["$"], '
                                  f"got {shown(fields)}")
    return list(fields)


def _cosine(semantic_score: float | None) -> float | None:
    """graphmem's semantic score, (1 + cos) / 2 (Neo4j's convention), as the cosine that
    ``InMemoryStore`` scores with."""
    return None if semantic_score is None else 2 * semantic_score - 1


def _searchable(query: str) -> int:
    """How many words of a query graphmem's full-text search takes, each one clause of its
    Lucene query (graphmem/search.py): the query's tokens, stop words aside."""
    return sum(t.lower() not in searching.STOP_WORDS for t in searching.tokens(query))


def _ours(answer: Answer) -> bool:
    """A key the store wrote (a scope may hold other facts written through Memory)."""
    v = answer.version or answer.candidates[0]
    return v.definition == DEFINITION and v.period == PERIOD and v.unit == ""


def _times(v: FactVersion) -> tuple[dt.datetime, dt.datetime]:
    """created_at: when the value was first put; updated_at: its latest put."""
    return v.available_by, max((e.available_by for e in v.sources), default=v.available_by)


def _item(namespace: tuple[str, ...], key: str, answer: Answer, *, search: bool = False,
          score: float | None = None) -> Any:
    """The Item (a SearchItem for a search) an answer gives; None when not found."""
    if answer.status == "not_found":
        return None
    if answer.status == "conflicted":
        raise ConflictedItemError(namespace, key, [v.version_id for v in answer.candidates])
    v = answer.version
    assert v is not None and isinstance(v.value, str)
    created, updated = _times(v)
    if search:
        return SearchItem(namespace=namespace, key=key, value=json.loads(v.value),
                          created_at=created, updated_at=updated, score=score)
    return Item(value=json.loads(v.value), key=key, namespace=namespace, created_at=created,
                updated_at=updated)


def _version(namespace: tuple[str, ...], key: str, v: FactVersion) -> ItemVersion:
    created, updated = _times(v)
    deleted = [x.recorded_at for x in v.lifecycle if x.kind == "invalidated"]
    return ItemVersion(namespace=namespace, key=key,
                       value=json.loads(v.value) if isinstance(v.value, str) else None,
                       version_id=v.version_id, created_at=created, updated_at=updated,
                       recorded_at=v.recorded_at, deleted_at=min(deleted, default=None),
                       erased=v.erased)
