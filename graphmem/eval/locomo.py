"""``graphmem eval locomo PATH``: LoCoMo's conversations through graphmem, scored per rung.

LoCoMo (ACL 2024) is published as JSON: a conversation holds ``session_N`` lists of
turns ``{speaker, dia_id, text}`` (a shared photo adds ``blip_caption``) and ``qa``
questions with ``evidence`` (the dia_ids holding the answer) and ``category`` (1
multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial: left out, its answer
is not in the conversation). PATH is a file (one conversation, or a list of them, or
``{"conversation": ..., "qa": ...}`` records as in ``locomo10.json``) or a folder of them.

Each conversation is loaded into its own namespace through ``GraphmemStore`` (a turn is
an item keyed by its dia_id, ``{"speaker", "text", "session"}``, the whole item embedded
when an embedder is given: what the full-text rung finds it by, speaker and date
included, which the questions name), in a throwaway tenant removed afterwards; each
question of categories 1-4 is searched in its own namespace on every rung
(``Memory.search`` with ``match="any"``: the words of a question are never all in a
turn), and the dia_ids of the hits are scored against its evidence: recall@5/@10 and
MRR per category, latency.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import InputError
from . import rungs, score, throwaway

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
BATCH = 200  # turns per store batch: one transaction each


def conversations(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """(name, conversation record with its qa) for each conversation under ``path``."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files:
        raise InputError(str(path), "no .json files")
    for file in files:
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            raise InputError(str(file), f"not LoCoMo JSON: {exc}") from exc
        records = data if isinstance(data, list) else [data]
        for i, rec in enumerate(records):
            conv = rec.get("conversation", rec)
            if "qa" not in rec or "speaker_a" not in conv:
                raise InputError(f"{file}[{i}]", "not a LoCoMo conversation (speaker_a, session_N, qa)")
            yield rec.get("sample_id") or (file.stem if len(records) == 1 else f"{file.stem}-{i}"), \
                {**conv, "qa": rec["qa"]}


def turns(conv: dict[str, Any]) -> list[tuple[str, dict[str, str]]]:
    """(dia_id, item value) for every turn, session by session."""
    out = []
    for key in sorted((k for k in conv if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k[8:])):
        when = conv.get(f"{key}_date_time", "")
        for t in conv[key]:
            text = t.get("text", "") + (f" [shares a photo: {t['blip_caption']}]" if t.get("blip_caption") else "")
            out.append((t["dia_id"], {"speaker": t["speaker"], "text": text, "session": when}))
    return out


def questions(conv: dict[str, Any]) -> list[tuple[str, set[str], str]]:
    """(question, evidence dia_ids, category name) for categories 1-4 with evidence."""
    out = []
    for qa in conv["qa"]:
        evidence = {e for raw in qa.get("evidence", []) for e in re.split(r"[;,\s]+", raw) if e}
        if qa.get("category") in CATEGORIES and evidence:
            out.append((qa["question"], evidence, CATEGORIES[qa["category"]]))
    return out


def load(store: Any, path: Path, loaded: dict[str, Any]) -> Iterator[tuple[tuple[str, ...], list[Any]]]:
    """Put every conversation under ``path`` into its own namespace of ``store``, one at a
    time; (namespace, its questions) for each, counts and load time added to ``loaded``."""
    from langgraph.store.base import PutOp

    for name, conv in conversations(path):
        ns = ("locomo", re.sub(r"[^\w-]", "_", name))
        items = turns(conv)
        for start in range(0, len(items), BATCH):
            _, ms = score.timed(store.batch, [PutOp(ns, dia, value) for dia, value in items[start:start + BATCH]])
            loaded["load_ms"] = round(loaded.get("load_ms", 0.0) + ms, 1)
        loaded["conversations"] = loaded.get("conversations", 0) + 1
        loaded["turns"] = loaded.get("turns", 0) + len(items)
        yield ns, questions(conv)


def store_for(memory: Any, tenant: str, embedder: Any) -> Any:
    """A LangGraph store of the tenant, embedding each turn whole (LangGraph's default
    field, ``$``: the same item the full-text index holds; its text alone leaves out the
    speaker a question asks about - MiniLM alone then found a quarter of the evidence
    where it finds half: docs/PERFORMANCE.md) and each question with the embedder's
    query side (a model that embeds queries apart from passages, as bge's and e5's do,
    would otherwise be asked the question as a passage: LangGraph embeds a query with
    ``embed_query`` only when given an Embeddings object)."""
    from ..integrations.langgraph import GraphmemStore

    if embedder is None:
        return GraphmemStore(memory, tenant=tenant)
    embedder.probe()  # its dimension, before the store is made

    from langchain_core.embeddings import Embeddings

    class Sides(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return embedder.documents(texts)

        def embed_query(self, text: str) -> list[float]:
            return embedder.query(text)

    return GraphmemStore(memory, tenant=tenant, index={
        "dims": embedder.dims, "embed": Sides(), "name": embedder.name})


def run(memory: Any, path: Path, embedder: Any = None, limit: int = 10) -> dict[str, Any]:
    """The ladder on every conversation under ``path``: a summary per rung."""
    offered = rungs(embedder)
    tallies = {r: score.Tally() for r in offered}
    loaded: dict[str, Any] = {"questions": 0}
    with throwaway(memory, "locomo") as tenant:
        store = store_for(memory, tenant, embedder)
        for ns, qs in load(store, path, loaded):
            scope = store.scope_of(ns)
            for question, evidence, category in qs:
                loaded["questions"] += 1
                for rung in offered:
                    ranked, ms, emb_ms = ask(memory, scope, store, ns, question, rung, limit)
                    tallies[rung].add([category], ranked, evidence, ms=ms, embedding_ms=emb_ms)
    return {"tenant": tenant, "loaded": loaded, "embedder": embedder.name if embedder else None,
            "rungs": {r: t.summary() for r, t in tallies.items()}}


def ask(memory: Any, scope: Any, store: Any, ns: tuple[str, ...], question: str, rung: str,
         limit: int) -> tuple[list[str], float, float | None]:
    """The dia_ids a rung returns for a question, its latency, its embedding time."""
    try:
        result, ms = score.timed(
            memory.search, scope, text=question, types=("fact",), entity=store.entity_of(ns), limit=limit,
            match="any", mode=rung, embedder=store.embedder if rung != "text" else None)
    except InputError as exc:
        if exc.where != "text":  # a question of stop words only finds nothing by text
            raise
        return [], 0.0, None
    return [h.answer.attribute for h in result.hits if h.answer], ms, result.explain.embedding_ms
