"""What the benchmark scripts share: a timestamped log line, percentiles, peak memory,
and the clock of graphmem's named statements."""

from __future__ import annotations

import resource
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any


def log(msg: str) -> None:
    """Progress on stderr, so stdout stays the result table or JSON."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def peak_rss_mb() -> float:
    """This process's peak resident memory (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def plan_operators(plan: dict[str, Any], depth: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every operator of a PROFILE/EXPLAIN plan (the driver's dict), with its depth."""
    yield depth, plan
    for child in plan.get("children", []):
        yield from plan_operators(child, depth + 1)


_UNTIMED: dict[str, Callable[..., Any]] = {}  # the driver's own begin and commit, once wrapped


def raw_tx(driver: Any, database: str | None, mode: str, work: Callable[[Any], Any]) -> Any:
    """One explicit transaction in a fresh session, the way graphmem.db runs its work, for
    the raw baselines: its begin and commit are never counted by a StatementClock."""
    import neo4j

    begin = _UNTIMED.get("begin", neo4j.Session.begin_transaction)
    commit = _UNTIMED.get("commit", neo4j.Transaction.commit)
    with driver.session(database=database, default_access_mode=mode) as session:
        tx = begin(session)
        try:
            out = work(tx)
            commit(tx)
            return out
        finally:
            if not tx.closed():
                tx.rollback()


class StatementClock:
    """Per graphmem named statement: calls, wall time, the server's own time, the longest
    wait for a first row, rows returned, and the parameters of its last call (to PROFILE a
    real batch later); ``calls`` lists every (name, params) while it is a list.

    Instrumentation only: it wraps graphmem's own ``Tx.run`` (which runs unchanged) and
    keeps the driver result each statement opens, whose summary gives the server's time
    (``result_available_after``: planning and the first row, + ``result_consumed_after``:
    streaming the rest). The driver's ``begin_transaction`` and ``commit`` are timed as
    ``(begin)`` and ``(commit)``, except in ``raw_tx`` (a baseline is not graphmem).
    """

    def __init__(self) -> None:
        import neo4j

        import graphmem.db as gdb

        self.stats: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0])
        self.last_params: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict[str, Any]]] | None = None
        _UNTIMED.setdefault("begin", neo4j.Session.begin_transaction)  # the driver's own,
        _UNTIMED.setdefault("commit", neo4j.Transaction.commit)  # for raw_tx
        opened: list[Any] = []  # the driver results of the statement being timed
        driver_run, graphmem_run, clock = neo4j.Transaction.run, gdb.Tx.run, self

        def keep_result(tx: Any, *args: Any, **kwargs: Any) -> Any:
            result = driver_run(tx, *args, **kwargs)
            opened.append(result)
            return result

        def timed(tx: Any, name: str, /, **params: Any) -> list[dict[str, Any]]:
            opened.clear()
            t0 = time.perf_counter()
            rows = graphmem_run(tx, name, **params)
            s = clock.stats[name]
            s[0] += 1
            s[1] += time.perf_counter() - t0
            s[4] += len(rows)
            if opened:  # all records are in: the summary is already there
                summary = opened[-1].consume()
                first = (summary.result_available_after or 0) / 1e3
                s[2] += first + (summary.result_consumed_after or 0) / 1e3
                s[3] = max(s[3], first)
            clock.last_params[name] = params
            if clock.calls is not None:
                clock.calls.append((name, params))
            return rows

        neo4j.Transaction.run = keep_result  # type: ignore[method-assign]
        gdb.Tx.run = timed  # type: ignore[method-assign]
        self._time_driver_call(neo4j.Session, "begin_transaction", "(begin)")
        self._time_driver_call(neo4j.Transaction, "commit", "(commit)")

    def _time_driver_call(self, cls: type, method: str, label: str) -> None:
        """Time a driver method as a pseudo-statement (wall time only)."""
        inner, stats = getattr(cls, method), self.stats

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                s = stats[label]
                s[0] += 1
                s[1] += time.perf_counter() - t0

        setattr(cls, method, timed)

    def reset(self) -> None:
        self.stats.clear()
        self.last_params.clear()

    def snapshot(self) -> dict[str, dict[str, float]]:
        return {k: {"calls": int(v[0]), "seconds": v[1], "server_seconds": v[2],
                    "max_first_row_s": v[3], "rows": int(v[4])}
                for k, v in sorted(self.stats.items())}


def drop_tenant(driver: Any, database: str | None, tenant: str) -> float:
    """Delete a bench tenant; seconds taken. Relationships go first, then nodes, each in
    transactions of 10,000 rows: detaching a dense node (an entity's hundreds of
    thousands of edges) inside one small batch of nodes exhausts the transaction memory."""
    t = time.perf_counter()
    with driver.session(database=database) as session:
        session.run("MATCH (n)-[r]->() WHERE n.tenant = $tenant "
                    "CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS", tenant=tenant).consume()
        session.run("MATCH (n) WHERE n.tenant = $tenant "
                    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS", tenant=tenant).consume()
    return time.perf_counter() - t
