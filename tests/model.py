"""A pure-Python reference model of graphmem's read rule and write path (no Neo4j).

Written from DESIGN.md sections 1-4 and the rule documented above ``fact.read`` in
cypher/fact.cypher, for the property test in test_property.py. Times are plain aware
datetimes; the test feeds in the same ``recorded_at`` stamps its clock gave graphmem.

A read of one key at (cutoff C, known_at K), with a requirement (a minimum authority
rank and/or source kinds, both optional):
1. live versions: recorded by K, not erased, not invalidated by a record made by K,
   and with live evidence: an evidence edge recorded by K, available by C, whose
   source was not retracted by K; of that evidence, what meets the requirement;
2. kept: the live versions whose best authority of evidence meeting the requirement
   is the highest;
3. a kept version is dropped when a Resolution recorded by K and available by C
   settles it in favour of another kept version, or when for every publisher behind
   its live evidence meeting the requirement some other kept version has later-
   available such evidence from that same publisher;
4. no distinct value left -> not_found, one -> active, several -> conflicted.

``statuses`` names, for every version of the key, the first filter that removes it -
in the order ``explain`` counts them: known_at, erased, cutoff (no evidence recorded by
K is public by C), invalidated, retracted (no live evidence), evidence (none meets the
requirement), outranked, superseded - or None for a version that survives.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

# The filters of a read, in the order explain counts what each removed.
FILTERS = ("known_at", "erased", "cutoff", "invalidated", "retracted", "evidence", "outranked",
           "superseded")


@dataclass
class Src:
    id: str
    publisher: str
    rank: int  # user_correction 4 > primary 3 > derived 2 > inference 1
    available_by: dt.datetime
    retracted_at: dt.datetime | None = None
    erased: bool = False
    kind: str = "doc"


@dataclass(frozen=True)
class Edge:
    source: str
    available_by: dt.datetime
    recorded_at: dt.datetime


@dataclass
class Version:
    key: Hashable
    value: object
    recorded_at: dt.datetime
    edges: list[Edge] = field(default_factory=list)
    invalidated_at: dt.datetime | None = None
    erased: bool = False
    vid: str | None = None  # graphmem's version id, filled in by the test


@dataclass(frozen=True)
class Resolution:
    chose: int
    settles: frozenset[int]
    recorded_at: dt.datetime
    available_by: dt.datetime


@dataclass
class Model:
    sources: dict[str, Src] = field(default_factory=dict)
    versions: list[Version] = field(default_factory=list)
    resolutions: list[Resolution] = field(default_factory=list)

    # ---------------------------------------------------------------- reads

    def statuses(self, key: Hashable, cutoff: dt.datetime, known_at: dt.datetime,
                 min_rank: int = 0, kinds: tuple[str, ...] | None = None) -> dict[int, str | None]:
        """Index of each version of ``key`` -> the filter that removes it at (cutoff,
        known_at) with that requirement, or None if it survives the read rule."""
        out: dict[int, str | None] = {}
        required: dict[int, list[Edge]] = {}
        for i, v in enumerate(self.versions):
            if v.key != key:
                continue
            seen = [e for e in v.edges if e.recorded_at <= known_at]
            public = [e for e in seen if e.available_by <= cutoff]
            live = [e for e in public if not self._retracted(e, known_at)]
            meets = [e for e in live if self._meets(e, min_rank, kinds)]
            if v.recorded_at > known_at:
                out[i] = "known_at"
            elif v.erased:
                out[i] = "erased"
            elif not public:
                out[i] = "cutoff"
            elif v.invalidated_at is not None and v.invalidated_at <= known_at:
                out[i] = "invalidated"
            elif not live:
                out[i] = "retracted"
            elif not meets:
                out[i] = "evidence"
            else:
                required[i] = meets
        rank = {i: max(self.sources[e.source].rank for e in edges) for i, edges in required.items()}
        best = max(rank.values(), default=0)
        kept = {i: edges for i, edges in required.items() if rank[i] == best}
        out.update({i: "outranked" for i in required if i not in kept})

        def settled(i: int) -> bool:
            return any(z.recorded_at <= known_at and z.available_by <= cutoff
                       and i in z.settles and z.chose in kept and z.chose != i
                       for z in self.resolutions)

        def outdated(i: int) -> bool:
            latest: dict[str, dt.datetime] = {}  # publisher -> its latest evidence on i
            for e in kept[i]:
                p = self.sources[e.source].publisher
                latest[p] = max(latest.get(p, e.available_by), e.available_by)
            return all(
                any(self.sources[b.source].publisher == p and b.available_by > at
                    for j, edges in kept.items() if j != i for b in edges)
                for p, at in latest.items()
            )

        out.update({i: "superseded" if settled(i) or outdated(i) else None for i in kept})
        return out

    def public_from(self, i: int, cutoff: dt.datetime, known_at: dt.datetime,
                    min_rank: int = 0, kinds: tuple[str, ...] | None = None) -> dt.datetime:
        """When surviving version ``i`` became public as a read at (cutoff, known_at)
        shows it: its earliest evidence that counts there (recorded, public, not
        withdrawn, meeting the requirement)."""
        return min(e.available_by for e in self.versions[i].edges
                   if e.recorded_at <= known_at and e.available_by <= cutoff
                   and not self._retracted(e, known_at) and self._meets(e, min_rank, kinds))

    def _meets(self, e: Edge, min_rank: int, kinds: tuple[str, ...] | None) -> bool:
        src = self.sources[e.source]
        return src.rank >= min_rank and (kinds is None or src.kind in kinds)

    def _retracted(self, e: Edge, known_at: dt.datetime) -> bool:
        at = self.sources[e.source].retracted_at
        return at is not None and at <= known_at

    def final(self, key: Hashable, cutoff: dt.datetime, known_at: dt.datetime,
              min_rank: int = 0, kinds: tuple[str, ...] | None = None) -> list[int]:
        """Indexes of the versions of ``key`` that survive the read rule at (cutoff, known_at)."""
        return [i for i, by in self.statuses(key, cutoff, known_at, min_rank, kinds).items() if by is None]

    def explain(self, key: Hashable, cutoff: dt.datetime, known_at: dt.datetime,
                min_rank: int = 0, kinds: tuple[str, ...] | None = None) -> dict[str, int]:
        """How many versions of ``key`` each filter removes (graphmem's ``Explain``)."""
        by = self.statuses(key, cutoff, known_at, min_rank, kinds)
        counts = Counter(reason for reason in by.values() if reason)
        return {"versions": len(by), **{f: counts[f] for f in FILTERS}}

    def read(self, key: Hashable, cutoff: dt.datetime, known_at: dt.datetime,
             min_rank: int = 0, kinds: tuple[str, ...] | None = None) -> tuple[str, set]:
        """(status, set of values) as ``as_of`` should report them."""
        values = {self.versions[i].value for i in self.final(key, cutoff, known_at, min_rank, kinds)}
        status = {0: "not_found", 1: "active"}.get(len(values), "conflicted")
        return status, values

    # ---------------------------------------------------------------- writes

    def record_source(self, sid: str, publisher: str, rank: int, available_by: dt.datetime,
                      kind: str = "doc") -> None:
        self.sources[sid] = Src(sid, publisher, rank, available_by, kind=kind)

    def assert_fact(self, key: Hashable, sid: str, value: object, available_by: dt.datetime,
                    now: dt.datetime,
                    choose: Callable[[list[int]], int] = lambda options: options[0]) -> int:
        """Apply one assertion recorded at ``now``; return the index of its version.

        An identical re-sent assertion changes nothing. Otherwise, if a version that
        survives the read at (cutoff=available_by, known_at=now) has the same value, the
        assertion becomes more evidence for it (``choose`` picks when several do), else a
        new version is created.
        """
        for i, v in enumerate(self.versions):
            if v.key == key and v.value == value and any(
                    (e.source, e.available_by) == (sid, available_by) for e in v.edges):
                return i
        same = [i for i in self.final(key, available_by, now) if self.versions[i].value == value]
        edge = Edge(sid, available_by, now)
        if same:
            target = choose(same)
            self.versions[target].edges.append(edge)
            return target
        self.versions.append(Version(key, value, now, [edge]))
        return len(self.versions) - 1

    def invalidate(self, i: int, now: dt.datetime) -> None:
        if self.versions[i].invalidated_at is None:  # the first record stands
            self.versions[i].invalidated_at = now

    def retract(self, sid: str, now: dt.datetime) -> None:
        if self.sources[sid].retracted_at is None:
            self.sources[sid].retracted_at = now

    def erase_source(self, sid: str) -> None:
        """Forget a source: every version evidenced by it alone loses its payload, for
        every cutoff and known_at; versions with other evidence keep it."""
        self.sources[sid].erased = True
        for v in self.versions:
            if {e.source for e in v.edges} == {sid}:
                v.erased = True

    def resolve(self, key: Hashable, settles: list[int], value: object, by: str,
                now: dt.datetime, choose: Callable[[list[int]], int] = lambda o: o[0]) -> int:
        """A user_correction assertion of ``value``, public and recorded at ``now``,
        that settles ``settles`` in favour of the version it lands on."""
        sid = f"resolution:{len(self.resolutions)}"
        self.record_source(sid, f"user:{by}", 4, now)
        chosen = self.assert_fact(key, sid, value, now, now, choose)
        self.resolutions.append(Resolution(chosen, frozenset(settles) - {chosen}, now, now))
        return chosen
