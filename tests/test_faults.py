"""Faults against the real server: a stalled writer, a write past its timeout, a lost
commit acknowledgement, a server that is down, and one killed in the middle of a load.

A stalled writer is a real process stopped with SIGSTOP while its transaction holds the
tenant's clock lock; the server is killed for real (only where the test session owns
it). Faults are injected around real calls only - a call made to stall, or to lose the
acknowledgement of a commit that did land - never by mocking the database.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import neo4j
import pytest
from graphmem.loaders import sec
from procs import cli, env, state, wait_state  # noqa: E402 - test helpers beside this file
from world import lose_first_acknowledgement

from graphmem import (
    CommitUnknownError,
    Entity,
    FactIn,
    Memory,
    Period,
    RetryPolicy,
    Scope,
    Source,
    Timeouts,
    TransactionTimeoutError,
    UnavailableError,
    facts,
)
from graphmem import server as srv
from graphmem.db import Database
from graphmem.queries import Catalogue, parse

UTC = dt.UTC
FAR = dt.datetime(2100, 1, 1, tzinfo=UTC)
LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"
LPA_ID = "cik:1997711"

# What the public API does not offer, read with a local catalogue (as tests/test_db.py does).
PROBES = Catalogue(parse(
    "// name: probe.transactions\n"
    "SHOW TRANSACTIONS YIELD metaData, status WHERE metaData.graphmem = $work\n"
    "RETURN collect(split(status, ' ')[0]) AS n\n"
    "// name: probe.evidenced_by\n"
    "MATCH (f:Fact)-[:EVIDENCED_BY]->(s:Source {id: $source}) WHERE s.tenant = $tenant\n"
    "RETURN count(f) AS n\n", "probes.cypher").statements)


def probe(mem: Memory, name: str, **params):
    db = Database(mem.db.driver, mem.db.database, queries=PROBES)
    return db.read_one(name, **params)["n"]


def loaded(mem: Memory, scope: Scope) -> tuple[dict[str, int], list[tuple]]:
    """What a load left: the scope's counts and every key's answer with its sources."""
    answers = mem.facts_as_of(scope, entity=LPA_ID, cutoff=FAR)
    return mem.counts(scope), sorted(
        (a.attribute, a.version.period.text, a.version.unit, str(a.version.value),
         tuple(sorted(e.source_id for e in a.version.sources))) for a in answers)


@pytest.fixture(scope="module")
def clean_lpa(migrated):
    """The LPA file loaded once, undisturbed: what every disturbed load must end equal to."""
    scope = Scope(tenant=f"test-clean-{uuid.uuid4().hex[:12]}")
    with migrated.connect() as mem:
        sec.load(mem, scope, LPA)
        return loaded(mem, scope)


# ------------------------------------------------------------------ a stalled writer

# In the writer process: stop (SIGSTOP) inside the transaction of the second filing,
# after its facts are written and before its commit, saying which filing it is.
STALL_IN_SECOND_FILING = """
import os, signal
from graphmem import facts
_real, _calls = facts.write_facts, []
def _write_then_stall(tx, scope, items, *args, **kwargs):
    out = _real(tx, scope, items, *args, **kwargs)
    _calls.append(1)
    if len(_calls) == 2:
        print("stalled", items[0].sources[0], len(items), flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
    return out
facts.write_facts = _write_then_stall
"""


@pytest.mark.timeout(300)
def test_a_stopped_writer_is_rolled_back_and_the_tenant_writes_on(migrated, scope, clean_lpa):
    timeout = 10.0  # the stopped writer's; the other writer keeps the defaults
    writer = cli("load", "companyfacts", str(LPA), "--tenant", scope.tenant,
                 environ=env(migrated, GRAPHMEM_WRITE_TIMEOUT=str(timeout)),
                 inject=STALL_IN_SECOND_FILING)
    try:
        line = writer.stdout.readline().split()
        assert line[:1] == ["stalled"], (line, writer.stderr.read() if writer.poll() else "")
        accession, rows = line[1], int(line[2])
        wait_state(writer.pid, "T")
        with migrated.connect() as mem:
            work = f"record (source {accession})"
            # the stopped process holds its tenant: its transaction is open on the server
            assert probe(mem, "probe.transactions", work=work) == ["Running"]
            began = time.monotonic()
            mem.put_entity(scope, Entity(id="another-writer"))  # waits for the tenant's lock
            waited = time.monotonic() - began
            print(f"\nthe other writer waited {waited:.1f} s behind a writer stopped with a "
                  f"{timeout:g} s write timeout ({rows} rows written, uncommitted)")
            assert mem.entity(scope, "another-writer") is not None
            # the server rolled the stopped writer back: nothing of its filing is left
            assert probe(mem, "probe.transactions", work=work) in ([], ["Terminated"])
            assert mem.source(scope, accession) is None
            assert probe(mem, "probe.evidenced_by", source=accession, tenant=scope.tenant) == 0
    finally:
        if state(writer.pid) == "T":
            writer.send_signal(signal.SIGCONT)
    # continued, it finds its transaction rolled back, writes that filing again and finishes
    out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0 and err == "", err
    assert out.startswith(f"loaded {LPA}")
    with migrated.connect() as mem:
        counts, answers = loaded(mem, scope)
    assert counts["entities"] == clean_lpa[0]["entities"] + 1  # "another-writer"
    assert {k: v for k, v in counts.items() if k != "entities"} == \
        {k: v for k, v in clean_lpa[0].items() if k != "entities"}
    assert answers == clean_lpa[1]


def test_a_write_past_its_timeout_is_rolled_back_and_says_so(migrated, scope):
    with migrated.connect(timeouts=Timeouts(write=2)) as mem:
        def slow(tx, at):
            facts.put_entity(tx, scope, Entity(id="e1"), at)
            time.sleep(5)  # past the timeout (the server checks every second or two)
            tx.run("admin.now")

        with pytest.raises(TransactionTimeoutError, match=r"its 2 s timeout \(2 tries\)") as info:
            mem.write(scope, "slow-write", slow)  # once more, in case it was stalled: then raised
        assert "slow-write" in str(info.value) and "admin.now" in str(info.value)
        assert mem.counts(scope)["entities"] == 0


def test_a_lock_wait_stopped_by_its_own_timeout_is_tried_again(migrated, scope, caplog):
    caplog.set_level("WARNING", logger="graphmem.db")
    holding, release = threading.Event(), threading.Event()

    def hold(tx, at):  # holds the tenant's clock lock (taken by Memory.write) for a while
        holding.set()
        release.wait(20)

    with migrated.connect() as holder, migrated.connect(timeouts=Timeouts(write=1.5)) as mem:
        thread = threading.Thread(target=holder.write, args=(scope, "holder", hold))
        thread.start()
        try:
            assert holding.wait(30)
            threading.Timer(5, release.set).start()
            mem.put_entity(scope, Entity(id="waiting-writer"))  # its 1.5 s pass in the lock queue
        finally:
            release.set()
            thread.join()
        assert mem.entity(scope, "waiting-writer") is not None
    retries = [r.getMessage() for r in caplog.records if r.name == "graphmem.db"]
    assert retries and all(("LockClientStopped" in m or "LockAcquisitionTimeout" in m)
                           and m.startswith("put_entity: retry") for m in retries), retries


# ------------------------------------------------------------------ lost acknowledgements


def test_a_load_whose_filing_commit_acknowledgement_is_lost_ends_equal_to_a_clean_one(
        mem, scope, clean_lpa, monkeypatch):
    lost = lose_first_acknowledgement(monkeypatch, writing="CREATE (f:Fact")  # a filing's
    report = sec.load(mem, scope, LPA)
    monkeypatch.undo()
    assert lost
    assert loaded(mem, scope) == clean_lpa
    # the retry found the filing the first try had written: its rows count as unchanged
    assert report.unchanged > 0 and report.sources_recorded == report.sources - 1


def test_a_lost_acknowledgement_of_a_conditional_write_is_raised_not_retried(mem, scope, monkeypatch):
    mem.put_entity(scope, Entity(id="acme"))
    mem.record_source(scope, Source(id="memo", kind="memo", authority="primary",
                                    available_by=dt.datetime(2024, 1, 2, tzinfo=UTC)))
    fact = FactIn(entity="acme", attribute="headcount", value=12,
                  period=Period(end=dt.date(2023, 12, 31)), sources=("memo",))
    lost = lose_first_acknowledgement(monkeypatch)
    with pytest.raises(CommitUnknownError, match="assert_fact: the connection was lost"):
        mem.assert_fact(scope, fact, expected_revision=0)
    monkeypatch.undo()
    assert lost
    # it had landed, once; a plain assertion of the same fact is retried and changes nothing
    assert len(mem.history(scope, entity="acme", attribute="headcount")) == 1
    lose_first_acknowledgement(monkeypatch)
    mem.assert_fact(scope, fact)
    assert len(mem.history(scope, entity="acme", attribute="headcount")) == 1


def test_a_server_that_does_not_answer_ends_in_one_error_naming_the_call(scope):
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    policy = RetryPolicy(attempts=3, seconds=10, first_wait=0.01, max_wait=0.05)
    with Memory.connect(f"bolt://127.0.0.1:{port}", retry=policy) as mem, \
            pytest.raises(UnavailableError, match=r"as_of: gave up after 3 attempt\(s\)") as info:
        mem.as_of(scope, entity="acme", attribute="revenue", cutoff=FAR)
    assert isinstance(info.value.__cause__, neo4j.exceptions.ServiceUnavailable)
    assert f"127.0.0.1:{port}" in str(info.value)


# ------------------------------------------------------------------ the server killed


# In the load's process: before the commit of the second filing, say so and give the
# test a moment to stop the server, so the commit is in flight when the server dies.
PAUSE_BEFORE_SECOND_FILING_COMMIT = """
import time, neo4j
from graphmem import facts
_real_write, _real_commit, _writes = facts.write_facts, neo4j.Transaction.commit, []
def _write(tx, scope, items, *args, **kwargs):
    _writes.append(items[0].sources[0])
    return _real_write(tx, scope, items, *args, **kwargs)
def _commit(self):
    if len(_writes) == 2 and not getattr(_commit, "done", False):
        _commit.done = True
        print("committing", _writes[-1], flush=True)
        time.sleep(1)
    return _real_commit(self)
facts.write_facts, neo4j.Transaction.commit = _write, _commit
"""


@pytest.mark.restart
@pytest.mark.timeout(480)
def test_a_load_survives_the_server_killed_during_a_commit(restartable, scope, clean_lpa):
    pid = srv.status(restartable.config).pid
    load = cli("--debug", "load", "companyfacts", str(LPA), "--tenant", scope.tenant,
               environ=env(restartable, GRAPHMEM_RETRY_ATTEMPTS="100000", GRAPHMEM_RETRY_SECONDS="400"),
               inject=PAUSE_BEFORE_SECOND_FILING_COMMIT)
    try:
        line = load.stdout.readline().split()
        assert line[:1] == ["committing"], (line, load.stderr.read() if load.poll() else "")
        os.kill(pid, signal.SIGSTOP)  # the commit reaches a server that reads nothing
        time.sleep(3)
        os.kill(pid, signal.SIGKILL)  # ... and dies with it unacknowledged
        wait_state(pid, "Z")
    finally:
        if state(pid) in ("T", "S", "R"):
            os.kill(pid, signal.SIGKILL)
        # the killed server's half-closed connections may hold its port for a while
        deadline = time.monotonic() + 150
        while not srv._port_free(restartable.config.port) and time.monotonic() < deadline:
            time.sleep(1)
        srv.start(restartable.config)
    out, err = load.communicate(timeout=400)
    assert load.returncode == 0, err[-3000:]
    assert out.startswith(f"loaded {LPA}")
    assert "IncompleteCommit" in err  # --debug shows the retries: the commit's fate was unknown
    with restartable.connect() as mem:
        assert loaded(mem, scope) == clean_lpa
