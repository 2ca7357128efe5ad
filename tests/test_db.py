"""Transactions, retries and migrations against the real server."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import threading
import time

import pytest

from graphmem import Entity, FactIn, Memory, Period, RetryPolicy, Source, StatementError
from graphmem import server as srv
from graphmem.db import Database
from graphmem.queries import Catalogue, parse

UTC = dt.UTC


def _counting_db(mem: Memory, text: str) -> tuple[Database, list[int]]:
    db = Database(mem.db.driver, mem.db.database, RetryPolicy(attempts=5, seconds=10),
                  queries=Catalogue(parse(text, "test.cypher").statements))
    return db, []


def test_syntax_error_is_raised_at_once_with_the_statement_name(mem):
    db, calls = _counting_db(mem, "// name: test.broken\nRETURN (\n")

    def work(tx):
        calls.append(1)
        return tx.run("test.broken")

    with pytest.raises(StatementError, match="test.broken") as info:
        db.write(work)
    assert "SyntaxError" in info.value.code
    assert len(calls) == 1, "a syntax error must not be retried"


def test_constraint_violation_is_raised_at_once(mem, scope):
    db, calls = _counting_db(
        mem, "// name: test.create_entity\nCREATE (:Entity {uid: $uid, tenant: $tenant, scope: $scope})\n"
    )
    uid = f"dup-{scope.tenant}"
    db.write(lambda tx: tx.run("test.create_entity", uid=uid, tenant=scope.tenant, scope=scope.id))

    def again(tx):
        calls.append(1)
        tx.run("test.create_entity", uid=uid, tenant=scope.tenant, scope=scope.id)

    with pytest.raises(StatementError, match="test.create_entity") as info:
        db.write(again)
    assert "ConstraintValidationFailed" in info.value.code
    assert len(calls) == 1


def test_read_each_runs_statements_by_name_sees_what_was_just_written_and_names_errors(mem, scope):
    db, calls = _counting_db(mem, (
        "// name: test.create_entity\nCREATE (:Entity {uid: $uid, tenant: $tenant, scope: $scope})\n"
        "// name: test.count\nMATCH (e:Entity {uid: $uid}) RETURN count(e) AS n\n"
        "// name: test.broken\nRETURN (\n"))
    uid = f"each-{scope.tenant}"
    db.write(lambda tx: tx.run("test.create_entity", uid=uid, tenant=scope.tenant, scope=scope.id))
    assert db.read_each(lambda tx: [tx.one("test.count", uid=uid)["n"] for _ in range(2)]) == [1, 1]

    def work(tx):
        calls.append(1)
        return tx.run("test.broken")

    with pytest.raises(StatementError, match="test.broken"):
        db.read_each(work)
    assert len(calls) == 1, "a syntax error must not be retried"


def test_migrate_twice_and_concurrently_is_safe(migrated):
    with migrated.connect() as mem:
        first = mem.migrate()
        results: list[int] = []
        threads = [threading.Thread(target=lambda: results.append(mem.migrate())) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [first] * 3
        names = {row["name"] for row in mem.server_info()["schema"]}
    assert {"graphmem_fact_version_id", "graphmem_factkey_lookup"} <= names


def test_migrate_from_two_processes_at_once(migrated):
    code = (
        "from graphmem import Memory\n"
        f"m = Memory.connect({migrated.uri!r}, {migrated.auth!r})\n"
        "print(m.migrate()); m.close()\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outs[0] == outs[1] != ""


@pytest.mark.restart
def test_write_retried_across_a_real_restart_lands_exactly_once(restartable, scope):
    policy = RetryPolicy(attempts=60, seconds=240, first_wait=0.5, max_wait=3)
    with restartable.connect(retry=policy) as mem:
        mem.put_entity(scope, Entity(id="ACME"))
        mem.record_source(scope, Source(id="doc", kind="memo", authority="primary",
                                        available_by=dt.datetime(2024, 1, 1, tzinfo=UTC)))
        srv.stop(restartable.config)
        restarter = threading.Thread(target=lambda: (time.sleep(3), srv.start(restartable.config)))
        restarter.start()
        try:
            version = mem.assert_fact(scope, FactIn(entity="ACME", attribute="headcount",
                                                    value=12, period=Period(end=dt.date(2023, 12, 31)),
                                                    sources=("doc",)))
        finally:
            restarter.join()
        history = mem.history(scope, entity="ACME", attribute="headcount")
    assert [v.version_id for v in history] == [version.version_id]
    assert len(history[0].sources) == 1
