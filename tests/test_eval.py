"""``graphmem eval`` on the real Neo4j: the counter-example set fails (exit 1) when one
group is broken on purpose and the others still pass; a fixed query set is scored per
rung and a forbidden hit fails it; LoCoMo's format is loaded and scored per category.
Every evaluation's throwaway tenant is gone afterwards."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from procs import env
from world import World, t

from graphmem import Entity, InputError, Memory, Scope, TaskStateIn, echo
from graphmem.cli import main
from graphmem.eval import counterexamples, locomo, queries, score, throwaway
from graphmem.integrations.langgraph import GraphmemStore
from graphmem.retrieval.embedders import Embedder, ToyEmbedder

TINY = Path(__file__).parent / "fixtures" / "locomo_tiny.json"  # LoCoMo's format, made up


@pytest.fixture(autouse=True)
def _server(migrated, monkeypatch):
    """The CLI reads the server from the environment: point it at the tests' Neo4j (its
    password too: procs.env)."""
    for name, value in env(migrated).items():
        if name.startswith("GRAPHMEM_"):
            monkeypatch.setenv(name, value)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def left(mem: Memory, tenant: str) -> int:
    with mem.db.driver.session(database="neo4j") as s:
        return s.run("MATCH (n) WHERE n.tenant = $t RETURN count(n) AS n", t=tenant).single()["n"]


def test_a_broken_group_fails_the_counterexamples_and_the_rest_pass(mem, monkeypatch):
    monkeypatch.setattr(Memory, "erase", lambda self, *a, **kw: 0)  # erasure broken on purpose
    result = invoke("eval", "counterexamples", "--embedder", "toy", "--json")  # every rung
    report = json.loads(result.output)
    status = {g["group"]: g["status"] for g in report["groups"]}
    assert result.exit_code == 1 and not report["ok"]
    assert status.pop("entity erased") == "fail"
    assert set(status.values()) == {"pass"}, status
    assert {g["layer"] for g in report["groups"]} == {"write", "retrieval", "context/use", "task/governance"}
    assert left(mem, report["tenant"]) == 0


def test_a_query_set_is_scored_per_rung_and_a_forbidden_hit_fails_it(mem, scope, tmp_path: Path):
    old = mem.save_task_state(scope, TaskStateIn(task_id="deploy", goal="deploy rollback E-4012 drafted")).id
    ids = {g: mem.save_task_state(scope, TaskStateIn(task_id=g, goal=goal)).id for g, goal in (
        ("deploy", "roll back the deploy after the certificate expired"),
        ("lunch", "order pizza for the team lunch"), ("E-4012", "payment declined with E-4012"))}
    lines = [{"query": "deploy rollback", "scope": {"tenant": scope.tenant}, "relevant": [ids["deploy"]],
              "forbidden": [old], "group": "words"},
             {"query": "E-4012", "scope": {"tenant": scope.tenant}, "relevant": [ids["E-4012"]],
              "forbidden": [old], "group": "code"}]  # a superseded revision: never legal
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    refused = invoke("eval", "retrieval", "--queries", str(path), "--embedder", "toy")
    assert refused.exit_code != 0 and "graphmem embed" in refused.output  # a search never writes
    assert invoke("embed", "--embedder", "toy", "--tenant", scope.tenant).exit_code == 0  # its own step
    result = invoke("eval", "retrieval", "--queries", str(path), "--embedder", "toy", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 0 and set(report["rungs"]) == {"text", "semantic", "hybrid"}
    for rung in report["rungs"].values():
        assert rung["groups"]["code"]["mrr"] == 1.0 and rung["forbidden_hits"] == 0
    assert report["rungs"]["text"]["groups"]["all"]["recall@10"] == 1.0
    lines[0]["forbidden"] = [ids["lunch"]]  # legal, so the semantic rung (every legal memory) shows it
    path.write_text("\n".join(json.dumps(x) for x in lines))
    result = invoke("eval", "retrieval", "--queries", str(path), "--embedder", "toy")
    assert result.exit_code == 1 and "forbidden" in result.output


def test_locomo_format_is_loaded_and_scored_per_category(mem, tmp_path: Path):
    (tmp_path / "c1.json").write_text(TINY.read_text())  # a folder of conversations
    result = invoke("eval", "locomo", str(tmp_path), "--embedder", "toy", "--json")
    report = json.loads(result.output)
    assert result.exit_code == 0 and report["loaded"] == {**report["loaded"], "turns": 5, "questions": 2}
    groups = report["rungs"]["hybrid"]["groups"]
    assert set(groups) == {"all", "multi-hop", "single-hop"} and groups["single-hop"]["recall@5"] == 1.0
    assert left(mem, report["tenant"]) == 0


class QuerySide:
    """An embedder that embeds a query apart from passages (as bge's and e5's do): a
    question is embedded as the text of its evidence turn, a passage as itself."""

    answers = {"What breed is Ann's puppy?": "A beagle, he loves the park",
               "What instrument did Bob start?": "I started learning the violin"}

    def __init__(self) -> None:
        self.toy = ToyEmbedder()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.toy(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.toy([self.answers.get(text, text)])[0]


def test_locomo_asks_each_question_with_the_embedders_query_side(mem):
    report = locomo.run(mem, TINY, Embedder(QuerySide(), name="query-side"))
    # asked as a passage, a question's own words would rank another turn first
    assert report["rungs"]["semantic"]["groups"]["all"]["mrr"] == 1.0
    assert left(mem, report["tenant"]) == 0


def test_locomo_embeds_each_turn_whole_speaker_included(mem):
    """A question names the person a turn's words do not ("What instrument did Bob
    start?" - "I started learning the violin"): each turn is embedded with its speaker and
    date, as the full-text rung finds it."""
    documents: list[str] = []

    class Recording(QuerySide):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            documents.extend(texts)
            return super().embed_documents(texts)

    locomo.run(mem, TINY, Embedder(Recording(), name="recording"))
    turns = json.loads(TINY.read_text())
    for turn in turns["session_1"] + turns["session_2"]:
        assert any(turn["text"] in d and turn["speaker"] in d and "May 2023" in d for d in documents), turn


def test_the_rung_tables_headers_stand_over_their_values():
    """Each of R@5, R@10 and MRR ends where its value ends, in every rung's column (the
    question count, which varies in width, stands beside the group's name)."""
    groups = {"all": {"recall@5": 0.5, "recall@10": 0.75, "mrr": 0.25, "queries": 231},
              "multi-hop": {"recall@5": 0.125, "recall@10": 0.5, "mrr": 1.0, "queries": 7}}
    rungs = {r: {"groups": groups, "forbidden_hits": 0, "latency_ms": {"p50": 1.0, "p95": 2.0}}
             for r in ("text", "semantic")}
    header, *rows = score.table(rungs).splitlines()[1:4]
    ends = [i + len(name) for name in ("R@5", "R@10", "MRR") for i in _all(header, name)]
    for row in rows:
        assert sorted(ends) == [m.end() for m in re.finditer(r"\d\.\d{3}", row)]


def test_the_rung_table_shows_the_query_embedding_time_of_the_rungs_that_embed():
    """`eval retrieval` reports each rung's embedding time (docs/DESIGN.md §7): the table
    too, not only --json; a text rung embeds nothing and shows a dash."""
    groups = {"all": {"recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0, "queries": 1}}
    rungs = {r: {"groups": groups, "forbidden_hits": 0, "latency_ms": {"p50": 1.0, "p95": 2.0},
                 "embedding_ms": ms} for r, ms in (("text", None), ("semantic", {"p50": 0.25, "p95": 3.5}))}
    assert score.table(rungs).splitlines()[-1].split() == ["embedding", "p50/p95", "ms", "-", "0.2/3.5"]
    del rungs["semantic"]
    assert "embedding" not in score.table(rungs)


def _all(text: str, word: str) -> list[int]:
    return [i for i in range(len(text)) if text.startswith(word, i)]


# ------------------------------------------------------ arithmetic, forbidden hits, checks, throwaway tenants


def test_an_evaluations_tenant_leaves_nothing_behind_not_even_its_clock(mem):
    with throwaway(mem, "review") as tenant:
        mem.put_entity(Scope(tenant=tenant), Entity(id="acme", name="Acme"))
    with mem.db.driver.session(database="neo4j") as s:
        left = s.run("MATCH (n) WHERE n.tenant = $t OR n.id = $t RETURN labels(n) AS labels",
                     t=tenant).data()
    assert left == []


def test_percentiles_are_nearest_rank():
    assert score.percentile([1.0, 2.0], 50) == 1.0
    assert score.percentile([float(i) for i in range(1, 11)], 50) == 5.0
    assert score.percentile([float(i) for i in range(1, 21)], 95) == 19.0
    assert score.percentile([float(i) for i in range(1, 61)], 95) == 57.0


def test_a_query_that_only_forbids_does_not_lower_recall():
    tally = score.Tally()
    tally.add(["code"], ["a", "b"], {"a"})
    tally.add(["other user"], ["c"], set(), forbidden=0)
    summary = tally.summary()["groups"]
    assert summary["all"] == {"queries": 1, "recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0}
    assert "other user" not in summary


def test_a_forbidden_langgraph_item_returned_is_counted(mem, scope, tmp_path: Path):
    store = GraphmemStore(mem, tenant=scope.tenant)
    store.put(("notes",), "deploy", {"text": "roll back the deploy"})
    store.put(("notes",), "secret", {"text": "roll back the deploy with the admin password"})
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"query": "roll back the deploy", "tenant": scope.tenant,
                                "namespace": ["notes"], "relevant": ["deploy"], "forbidden": ["secret"]}))
    report = queries.run(mem, path)
    assert report["rungs"]["text"]["forbidden_hits"] == 1 and not report["ok"]


@pytest.mark.parametrize("line, where", [
    ({"query": "q"}, '"scope"'), ({"query": "q", "namespace": ["a"]}, '"tenant"'),
    ({"query": "q", "tenant": "x", "namespace": "a.b"}, "list of labels")])
def test_a_query_line_without_a_scope_is_refused_naming_it(tmp_path: Path, line, where):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(line))
    with pytest.raises(InputError, match=where):
        queries.read(path)


def test_the_correction_check_fails_a_context_that_also_shows_the_original(mem, scope, monkeypatch):
    """A context that renders the original value beside the correction is not using the
    correction; the check looked for "100 USD", which no rendering contains."""
    real = Memory.build_context

    def showing_the_original(self, *args, **kwargs):
        ctx = real(self, *args, **kwargs)
        line = next(x for x in ctx.rendered.splitlines() if " = 110 | " in x)
        return ctx.model_copy(update={"rendered": ctx.rendered + "\n" + line.replace(" = 110 | ", " = 100 | ")})

    monkeypatch.setattr(Memory, "build_context", showing_the_original)
    w = counterexamples.World(mem, scope, None)
    counterexamples.corrected(w)
    assert dict(w.checks)["the context uses the correction, not the original"] is False


def test_the_withdrawal_and_erasure_checks_fail_when_search_finds_nothing_at_all(mem, scope, monkeypatch):
    """'Gone after' proves nothing if it was never found: with a search broken to find
    nothing, the withdrawn and erased groups fail instead of passing vacuously."""
    real = Memory.search
    monkeypatch.setattr(Memory, "search", lambda self, s, **kw: real(self, s, **{**kw, "text": "nothing-like-it"}))
    for group, check in ((counterexamples.withdrawn, "the fact is found before its source is withdrawn"),
                         (counterexamples.erased, "the context shows them before the erase")):
        w = counterexamples.World(mem, scope, None)
        group(w)
        assert dict(w.checks)[check] is False


def test_a_conflict_hit_showing_both_relevant_candidates_recalls_both(mem, scope, tmp_path: Path):
    w = World(mem, scope)
    """Two equal publishers disagree: the one hit of the key shows both candidates, so a
    query naming both as relevant has found both (recall 1), not one of them (0.5)."""
    w.source("a", t("2024-05-01"), publisher="cik:1")
    w.source("b", t("2024-05-02"), publisher="cik:2")
    va, vb = w.fact(Decimal("100"), "a"), w.fact(Decimal("120"), "b")
    [hit] = w.search("acme revenue").hits
    assert hit.status == "conflicted" and set(hit.memory_ids) == {va.version_id, vb.version_id}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"query": "acme revenue", "scope": {"tenant": w.scope.tenant},
                                "relevant": [va.version_id, vb.version_id]}))
    report = queries.run(w.mem, path)
    assert report["rungs"]["text"]["groups"]["all"] == {
        "queries": 1, "recall@5": 1.0, "recall@10": 1.0, "mrr": 1.0}


@pytest.mark.parametrize("bad", [
    {"types": "experiance"}, {"types": ["fact", 3]}, {"relevant": [{"id": "x"}]},
    {"forbidden": [["x"]]}, {"group": ["code"]}])
def test_a_malformed_query_line_is_refused_by_its_line_number_before_any_search(
        mem, scope, tmp_path: Path, monkeypatch, bad):
    """A query set is checked line by line before anything runs: a wrong ``types``,
    a relevant id that is no string or a group that is no label is named by its line,
    not met half-way through the run as another error (or a TypeError)."""
    good = {"query": "deploy", "scope": {"tenant": scope.tenant}}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **bad}))
    searched: list[str] = []
    monkeypatch.setattr(Memory, "search", lambda self, *a, **kw: searched.append(kw["text"]))
    with pytest.raises(InputError) as refused:
        queries.run(mem, path)
    assert refused.value.where == f"{path}:2" and searched == []


# ------------------------------------------------------------------ eval counterexamples


@pytest.mark.parametrize("broken", ["text", "ids"])
def test_the_echo_counterexample_fails_when_either_half_of_the_guard_is_broken(mem, monkeypatch, broken):
    """The guard refuses a repeated line by its text and a cited memory by its id. The
    check repeated a line that holds the id too, so it passed with the text half broken
    (an agent quoting its context without the tag would be let through) and with the id
    half broken."""
    if broken == "text":
        monkeypatch.setattr(echo, "fingerprints", lambda text: [])
    else:
        monkeypatch.setattr(echo, "MEMORY_ID", echo.re.compile(r"(?!)"))
    monkeypatch.setattr(counterexamples, "GROUPS", tuple(
        g for g in counterexamples.GROUPS if g[2] is counterexamples.echo_refused))
    report = counterexamples.run(mem)
    assert [g["status"] for g in report["groups"]] == ["fail"] and not report["ok"]


def test_a_group_raising_any_error_fails_and_the_others_still_report(mem, monkeypatch):
    """A group that raised a ValueError (or a driver error) aborted the whole report with
    one line; it is that group's failure, with what it raised, and the others report."""
    def broken(w):
        raise ValueError("a bug in the group")

    groups = counterexamples.GROUPS[:2]
    monkeypatch.setattr(counterexamples, "GROUPS", ((*groups[0][:2], broken), groups[1]))
    report = counterexamples.run(mem)
    first, second = report["groups"]
    assert first["status"] == "fail" and "raised ValueError: a bug in the group" in first["checks"][0]["check"]
    assert second["status"] == "pass" and not report["ok"]


def test_a_query_file_that_is_not_utf8_is_refused_naming_it(mem, tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_bytes(b'{"query": "caf\xe9", "scope": {"tenant": "t"}}\n')  # Latin-1
    with pytest.raises(InputError) as refused:
        queries.run(mem, path)
    assert refused.value.where == str(path) and "utf-8" in refused.value.reason
    path.write_bytes(b"\xef\xbb\xbf" + b'{"query": "x", "scope": {"tenant": "t"}, "relevant": ["a"]}\n')
    assert queries.read(path)[0]["query"] == "x"  # a byte-order mark is no JSON error
