"""Embedders: what turns a memory's search text (and a query) into a vector.

graphmem ships no model. An embedder is whatever the caller has:

- a callable ``list[str] -> list[list[float]]``, synchronous or ``async``;
- a LangChain ``Embeddings`` object (anything with ``embed_documents`` and
  ``embed_query``, duck typed: LangChain is not imported);
- a spec string for ``graphmem embed`` and ``graphmem eval`` (:func:`from_spec`):
  ``toy``, ``wordllama``, ``sentence-transformers:<model>``, ``fastembed:<model>``,
  or ``module:attribute`` naming one of the above.

Each is wrapped in an :class:`Embedder` with a ``name`` (recorded in the graph with the
dimension and the embedder's vector of :data:`PROBE`, per scope, so vectors of two models
are never mixed: see store.py).

:class:`ToyEmbedder` is a deterministic, dependency-free embedder for tests and demos
(hashed character trigrams and words): it knows spelling, not meaning. It is never a
default.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from .. import limits
from ..errors import InputError

Vectors = list[list[float]]

NAME_BYTES = limits.NAME_BYTES
MAX_DIMS = 4096
"""A vector's dimension: Neo4j's vector functions accept up to 4,096 (the largest common
models have 3,072)."""
PROBE = "graphmem embedder probe: revenue rose 12% in Q3 2024 after the ERR-4012 rollback"
"""A fixed text each embedder embeds once. Its vector is kept with a scope's embedder: two
models that share a name and a dimension (two lambdas, two functions called ``embed``,
one class around two models) give it vectors far apart, so the second is refused."""
SAME_MODEL = 0.9
"""The least cosine similarity of two vectors of :data:`PROBE` for one model: a model run
again (on other hardware, in another batch) gives 0.99 and more, two models of one
dimension near 0 (their spaces are unrelated)."""
BATCH = 64
"""Texts per embedder call: big enough to amortise a model's per-call cost, small enough
that a backfill's progress is visible and a killed one loses little."""


def _run(result: Any) -> Any:
    """An async embedder's result, awaited on a private loop (the driver is synchronous)."""
    if inspect.isawaitable(result):
        async def wait() -> Any:
            return await result
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(wait())
        raise InputError("embedder", "an async embedder cannot be called from a running event "
                                     "loop; call graphmem from a worker thread")
    return result


class Embedder:
    """A named embedder: ``documents(texts)`` and ``query(text)`` give checked vectors
    (finite floats, all of one dimension). ``dims`` is learnt from the first call when
    not given."""

    def __init__(self, fn: Callable[[list[str]], Any] | Any, *, name: str | None = None,
                 dims: int | None = None,
                 text_of: Callable[[dict[str, Any]], list[str]] | None = None):
        # what of a memory is embedded (store.TextOf): its search text unless told
        self.text_of = text_of or (lambda row: [row["text"]])
        if hasattr(fn, "embed_documents") and hasattr(fn, "embed_query"):
            self._docs = fn.embed_documents
            self._query: Callable[[str], Any] = fn.embed_query
            default = type(fn).__name__ + ":" + str(getattr(fn, "model", getattr(fn, "model_name", "")))
        elif callable(fn):
            self._docs = fn
            self._query = lambda text: _first(fn([text]))
            default = getattr(fn, "__qualname__", type(fn).__name__)
        else:
            raise InputError("embedder", "a callable list[str] -> list[list[float]] or an object "
                                         "with embed_documents and embed_query is required")
        self.name = limits.check_id("embedder name", name or default, limit=NAME_BYTES)
        self.dims = limits.check_int("dims", dims, 1, MAX_DIMS, optional=True)
        self._probe: list[float] | None = None
        self.checked: set[tuple[str, str]] = set()  # (tenant, scope) whose record matched its probe

    def probe(self) -> list[float]:
        """This embedder's vector of :data:`PROBE`, made once (it fixes ``dims`` too)."""
        if self._probe is None:
            self._probe = self.query(PROBE)
        return self._probe

    def similarity(self, probe: Sequence[float]) -> float:
        """Cosine similarity of a recorded vector of PROBE and this embedder's."""
        mine = self.probe()
        norms = math.sqrt(math.fsum(x * x for x in probe)) * math.sqrt(math.fsum(x * x for x in mine))
        return math.fsum(a * b for a, b in zip(probe, mine, strict=True)) / norms if norms else 0.0

    def documents(self, texts: Sequence[str]) -> Vectors:
        out: Vectors = []
        for start in range(0, len(texts), BATCH):
            chunk = list(texts[start:start + BATCH])
            got = _run(self._docs(chunk))
            if len(got) != len(chunk):
                raise InputError("embedder", f"{self.name} returned {len(got)} vectors for "
                                             f"{len(chunk)} texts")
            out += [self._check(v) for v in got]
        return out

    def query(self, text: str) -> list[float]:
        return self._check(_run(self._query(text)))

    def _check(self, vector: Any) -> list[float]:
        v = [float(x) for x in vector]
        if self.dims is None:
            self.dims = limits.check_int("dims", len(v), 1, MAX_DIMS)
        if len(v) != self.dims or not all(math.isfinite(x) for x in v):
            raise InputError("embedder", f"{self.name} gave a vector of {len(v)} values; "
                                         f"{self.dims} finite floats expected")
        return v


def _first(batch: Any) -> Any:
    """The first vector of a batch's result, awaited first when it is awaitable: an
    ``async def`` function's, but also an object's whose ``__call__`` is async or a sync
    callable's that returns a coroutine, which ``iscoroutinefunction`` does not see."""
    if not inspect.isawaitable(batch):
        return batch[0]

    async def first() -> Any:
        return (await batch)[0]
    return first()


def as_embedder(value: Any, **names: Any) -> Embedder | None:
    """An Embedder from what a caller passed (None stays None)."""
    if value is None or isinstance(value, Embedder):
        return value
    if isinstance(value, str):
        return from_spec(value)
    return Embedder(value, **names)


_WORD = re.compile(r"\w+")


class ToyEmbedder:
    """A deterministic embedder for tests and demos, not for real use: the words and the
    character trigrams of each word, hashed into ``dims`` signed buckets, L2-normalised.
    Texts that share words or word fragments come out similar; meaning is not seen."""

    def __init__(self, dims: int = 64):
        self.dims = dims

    def __call__(self, texts: list[str]) -> Vectors:
        return [self.vector(t) for t in texts]

    def vector(self, text: str) -> list[float]:
        v = [0.0] * self.dims
        for word in _WORD.findall(text.lower()):
            padded = f"<{word}>"
            for feature in [word] * 2 + [padded[i:i + 3] for i in range(len(padded) - 2)]:
                h = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "big")
                v[h % self.dims] += 1.0 if h >> 63 else -1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / norm for x in v]


def _wordllama(model: str = "") -> Embedder:
    from pathlib import Path

    import wordllama  # optional extra: graphmem[wordllama]

    # the wheel ships the weights and the tokenizer; pointing the cache at the package
    # finds both (the package's own lookup misses its tokenizers folder) and never
    # downloads anything
    wl = wordllama.WordLlama.load(**({"config": model} if model else {}),
                                  cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    return Embedder(lambda texts: [list(map(float, v)) for v in wl.embed(texts, norm=True)],
                    name=f"wordllama:{model or 'l2_supercat'}")


def _sentence_transformers(model: str) -> Embedder:
    from sentence_transformers import SentenceTransformer  # graphmem[sentence-transformers]

    st = SentenceTransformer(model or "all-MiniLM-L6-v2", device="cpu")
    return Embedder(lambda texts: st.encode(texts, normalize_embeddings=True).tolist(),
                    name=f"sentence-transformers:{model or 'all-MiniLM-L6-v2'}")


def _fastembed(model: str) -> Embedder:
    from fastembed import TextEmbedding  # graphmem[fastembed]

    fe = TextEmbedding(model or "BAAI/bge-small-en-v1.5")
    return Embedder(lambda texts: [v.tolist() for v in fe.embed(texts)],
                    name=f"fastembed:{model or 'BAAI/bge-small-en-v1.5'}")


def _toy(dims: str) -> Embedder:
    """``toy[:dims]``: a dimension that is not a whole number from 1 to ``MAX_DIMS`` is
    refused here, not met as a ZeroDivisionError or IndexError at the first text."""
    # a dimension of more digits than MAX_DIMS is out of range before int() reads it (past
    # 4,300 digits int() raises); it is the spec's bad value, named as the embedder's
    if dims and not (dims.isdecimal() and len(dims) <= len(str(MAX_DIMS)) and 1 <= int(dims) <= MAX_DIMS):
        shown = dims if len(dims) <= 12 else f"{dims[:12]}...({len(dims):,} characters)"
        raise InputError("embedder", f"toy:{shown}: the dimension must be an integer from 1 to {MAX_DIMS:,}")
    return Embedder(ToyEmbedder(int(dims or 64)), name=f"toy:{dims or 64}")


SPECS: dict[str, Callable[[str], Embedder]] = {
    "toy": _toy,
    "wordllama": _wordllama,
    "sentence-transformers": _sentence_transformers,
    "fastembed": _fastembed,
}


def from_spec(spec: str) -> Embedder:
    """An embedder named by text: ``toy[:dims]``, ``wordllama[:config]``,
    ``sentence-transformers[:model]``, ``fastembed[:model]``, or ``package.module:attr``
    (a callable or Embeddings object, or a zero-argument factory returning one)."""
    kind, _, arg = spec.partition(":")
    if kind in SPECS:
        try:
            return SPECS[kind](arg)
        except ImportError as exc:
            raise InputError("embedder", f"{spec}: {exc.name} is not installed "
                                         f"(pip install 'graphmem[{kind}]')") from exc
    if not arg:
        raise InputError("embedder", f"{spec!r}: expected one of {', '.join(SPECS)} or module:attribute")
    try:
        target = getattr(importlib.import_module(kind), arg)
    except (ImportError, AttributeError) as exc:
        raise InputError("embedder", f"{spec}: {exc}") from exc
    if inspect.isclass(target) or (callable(target) and not inspect.signature(target).parameters):
        target = target()
    return Embedder(target, name=spec)
