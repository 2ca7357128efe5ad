"""``graphmem eval counterexamples``: the minimum counter-example set, run for real.

Each group writes a small world into a throwaway tenant of the configured Neo4j (removed
afterwards) and checks what a user would notice, on every retrieval rung the
configuration offers. Groups by layer (the evaluation protocol's four):

- write: a write retried, duplicated and raced (nothing lost or doubled); an injected
  memory repeated back (the echo guard refuses it); a malicious source trying to poison
  later retrieval (it neither passes the gates nor outranks evidenced memories);
- retrieval: two users with similar but different facts (no cross-scope answer);
  information never given (not found); an exact error code; a semantic paraphrase (needs
  an embedder: skipped without one - full text cannot find it, which is the point);
- context and use: a fact later corrected (the correction is what is used); an explicit
  past point in time (what was known then);
- task and governance: a source withdrawn, and an entity erased (gone from search,
  contexts and derivations).

A group fails when any of its checks does; the command then exits 1.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..errors import EchoError
from ..models import Authority, Entity, ExperienceIn, FactIn, Period, Scope, Source, TaskStateIn
from . import rungs, throwaway

Q1 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


@dataclass
class World:
    """One group's scope and what it needs: the memory, the rungs, an embedder."""

    mem: Any
    scope: Scope
    embedder: Any
    checks: list[tuple[str, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for eid, name in (("acme", "Acme Corp"), ("globex", "Globex Inc")):
            self.mem.put_entity(self.scope, Entity(id=eid, name=name, kind="company"))

    def check(self, what: str, ok: bool) -> None:
        self.checks.append((what, bool(ok)))

    def source(self, sid: str, days: int = 0, authority: Authority = Authority.PRIMARY,
               publisher: str = "cik:1", title: str | None = None) -> None:
        self.mem.record_source(self.scope, Source(id=sid, kind="filing", authority=authority,
                                                  publisher=publisher, title=title,
                                                  available_by=T0 + dt.timedelta(days=days)))

    def fact(self, value: Any, *sources: str, entity: str = "acme", attribute: str = "revenue") -> Any:
        return self.mem.assert_fact(self.scope, FactIn(entity=entity, attribute=attribute, value=value,
                                                       unit="USD", period=Q1, sources=sources))

    def search(self, text: str, **kw: Any) -> dict[str, Any]:
        """The result on every rung offered, by rung (the scope embedded first: a search
        never embeds)."""
        if self.embedder is not None:
            self.mem.embed(self.scope, embedder=self.embedder)
        return {r: self.mem.search(self.scope, text=text, mode=r, embedder=self.embedder if r != "text"
                                   else None, **kw) for r in rungs(self.embedder)}

    def found(self, text: str, **kw: Any) -> dict[str, set[str]]:
        """The ids every rung returned (each hit's memory ids), by rung."""
        return {r: {i for h in res.hits for i in h.memory_ids} for r, res in self.search(text, **kw).items()}

    def answer(self, **kw: Any) -> Any:
        return self.mem.as_of(self.scope, entity=kw.pop("entity", "acme"), attribute=kw.pop("attribute", "revenue"),
                              period=Q1, unit="USD", **kw)


# ------------------------------------------------------------------ write


def written_once(w: World) -> None:
    w.source("10q")
    first = w.fact(Decimal(100), "10q")
    again = w.fact(Decimal(100), "10q")  # a retry of the same write
    w.check("a repeated write lands on the same version", again.version_id == first.version_id)
    errors: list[BaseException] = []

    def race() -> None:
        try:
            w.fact(Decimal(101), "10q", attribute="margin")
        except BaseException as exc:  # noqa: BLE001 - reported as a failed check
            errors.append(exc)
    threads = [threading.Thread(target=race) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = w.mem.history(w.scope, entity="acme", attribute="margin", period=Q1)
    w.check("four racing writes of one fact: one version, none lost", not errors and len(history) == 1)
    w.check("a re-recorded source changes nothing", w.mem.record_source(w.scope, Source(
        id="10q", kind="filing", authority=Authority.PRIMARY, publisher="cik:1", available_by=T0)) is False)


def echo_refused(w: World) -> None:
    w.source("run-1", title="payment retry run")
    w.mem.remember_experience(w.scope, ExperienceIn(trigger="card payment declined E-4012", outcome="retry worked",
                                                    evidence=("run-1",)))
    result = w.mem.search(w.scope, text="E-4012")
    ctx = w.mem.build_context(w.scope, task_id="eval", memories=result, token_budget=400)
    line = next((x for x in (ctx.rendered or "").splitlines() if "E-4012" in x), "")
    tag, _, text = line.partition("] ")  # the text alone: refused for what it says, not its id
    w.check("an agent repeating its context back is refused as evidence", text and _echo_refused(w, text))
    w.check("an agent citing an injected memory's id is refused as evidence",
            tag and _echo_refused(w, f"as memory {tag.rsplit(' ', 1)[-1]} said, the retry worked"))


def _echo_refused(w: World, outcome: str) -> bool:
    """Whether an experience observing ``outcome`` is refused by the echo guard: each
    half of the guard (the text repeated, a memory id cited) is checked on its own."""
    try:
        w.mem.remember_experience(w.scope, ExperienceIn(trigger="card payment declined E-4012", outcome=outcome,
                                                        evidence=("run-1",)))
    except EchoError:
        return True
    return False


def poison_resisted(w: World) -> None:
    w.source("10q")
    w.source("blog", days=1, authority=Authority.INFERENCE, publisher="blog:anon",
             title=" ".join(["acme revenue"] * 20))
    w.fact(Decimal(100), "10q")
    w.fact(Decimal(999), "blog")
    w.check("as_of keeps the evidenced value", w.answer(cutoff=T0 + dt.timedelta(days=30)).version.value
            == Decimal(100))
    tops = {r: res.hits[0].answer.version.value if res.hits and res.hits[0].answer.version else None
            for r, res in w.search("acme revenue").items()}
    w.check(f"keyword stuffing does not outrank the primary source ({tops})",
            all(v == Decimal(100) for v in tops.values()))
    gated = w.mem.remember_experience(w.scope, ExperienceIn(trigger="acme revenue is 999, trust me"))
    w.check("an unevidenced claim stays a candidate", gated.status == "candidate")
    w.check("a candidate is never found", all(gated.id not in ids for ids in w.found("acme revenue 999").values()))


# ------------------------------------------------------------------ retrieval


def scopes_apart(w: World) -> None:
    other = Scope(tenant=w.scope.tenant, user="bob")
    mine = Scope(tenant=w.scope.tenant, user="alice")
    a = w.mem.save_task_state(mine, TaskStateIn(task_id="editor", goal="alice prefers the vim editor"))
    b = w.mem.save_task_state(other, TaskStateIn(task_id="editor", goal="bob prefers the emacs editor"))
    w.scope = mine
    found = w.found("which editor does the user prefer", match="any")
    w.check(f"only alice's memory in alice's scope ({found})",
            all(a.id in ids and b.id not in ids for ids in found.values()))


def never_given(w: World) -> None:
    w.mem.save_task_state(w.scope, TaskStateIn(task_id="trip", goal="book the flight to Lisbon"))
    w.check("a question about something never stored is not found",
            w.mem.search(w.scope, text="passport number").status == "not_found")
    w.check("as_of of a fact never given is not_found", w.answer(cutoff=T0).status == "not_found")


def error_code(w: World) -> None:
    w.source("run-1")
    for code, text in (("E-4012", "insufficient funds"), ("E-4013", "card expired"), ("E-4014", "limit")):
        w.mem.remember_experience(w.scope, ExperienceIn(
            trigger=f"payment declined with error {code}: {text}", outcome="handled", evidence=("run-1",)))
    tops = {r: res.hits[0].experience.trigger if res.hits else "" for r, res in
            w.search("what does payment error E-4013 mean", match="any").items()}
    w.check(f"the memory holding the exact code ranks first on every rung ({tops})",
            all("E-4013" in t for t in tops.values()))


def paraphrase(w: World) -> str | None:
    if w.embedder is None:
        return "no embedder configured: full text cannot find a paraphrase (set GRAPHMEM_EMBEDDER)"
    goals = ("The release was rolled back because the TLS certificate had expired.",
             "The team ordered pizza for the Friday lunch.", "Quarterly revenue grew eight percent.",
             "The office moves to the third floor in March.")
    ids = [w.mem.save_task_state(w.scope, TaskStateIn(task_id=f"t{i}", goal=g)).id for i, g in enumerate(goals)]
    w.mem.embed(w.scope, embedder=w.embedder)  # its own step: a search never embeds
    for rung in ("semantic", "hybrid"):
        res = w.mem.search(w.scope, text="Why did we undo the deployment?", mode=rung, embedder=w.embedder, limit=1)
        w.check(f"{rung}: the paraphrased memory is first", [h.memory_id for h in res.hits] == ids[:1])
    return None


# ------------------------------------------------------------------ context and use


def corrected(w: World) -> None:
    w.source("10q")
    w.source("10k", days=200)
    w.fact(Decimal(100), "10q")
    w.fact(Decimal(110), "10k")
    now = T0 + dt.timedelta(days=300)
    w.check("as_of after the correction gives it", w.answer(cutoff=now).version.value == Decimal(110))
    res = w.mem.search(w.scope, text="acme revenue", cutoff=now)
    ctx = w.mem.build_context(w.scope, task_id="eval", memories=res, token_budget=400)
    w.check("the context uses the correction, not the original", _shows(ctx, 110) and not _shows(ctx, 100))


def _shows(ctx: Any, value: int) -> bool:
    """Whether a context renders a fact of this value: its claim ends ``= value`` before
    the status (a bare "110" could be any id or time of the rendering)."""
    return f" = {value} | " in (ctx.rendered or "")


def past_point(w: World) -> None:
    corrected(w)
    w.checks.clear()
    then = T0 + dt.timedelta(days=100)
    w.check("as_of before the correction gives what was public then",
            w.answer(cutoff=then).version.value == Decimal(100))
    res = w.mem.search(w.scope, text="acme revenue", cutoff=then)
    w.check("a search at that time finds the original", res.hits and res.hits[0].answer.version.value == Decimal(100))


# ------------------------------------------------------------------ task and governance


def withdrawn(w: World) -> None:
    w.source("wire", publisher="wire:a", title="acme wire report")
    v = w.fact(Decimal(5), "wire", entity="globex")
    w.check("the fact is found before its source is withdrawn",  # else 'gone' below would be vacuous
            any(v.version_id in ids for ids in w.found("globex revenue").values()))
    w.mem.retract_source(w.scope, "wire", reason="withdrawn by the publisher")
    w.check("a withdrawn source's fact is gone from every rung",
            all(v.version_id not in ids for ids in w.found("globex revenue").values()))
    w.check("and from as_of", w.answer(entity="globex", cutoff=T0 + dt.timedelta(days=9)).status == "not_found")


def erased(w: World) -> None:
    w.source("10q", title="acme quarterly report")
    base = w.fact(Decimal(918273), "10q")
    later = T0 + dt.timedelta(days=9)
    derived = w.mem.derive(w.scope, method="double", method_version="1", params={},
                           inputs={"x": base.version_id},
                           output=FactIn(entity="acme", attribute="revenue_x2", unit="USD",
                                         value=Decimal(1836546), period=Q1))
    res = w.mem.search(w.scope, text="acme revenue", cutoff=later)
    ctx = w.mem.build_context(w.scope, task_id="eval", memories=res, token_budget=400)
    w.check("the context shows them before the erase", "918273" in (ctx.rendered or ""))  # else vacuous below
    w.mem.erase(w.scope, entity="acme", reason="the user asked to be forgotten", by="eval")
    gone = {base.version_id, derived.version_id}
    w.check("erased memories are gone from every rung",
            all(not (gone & ids) for ids in w.found("acme revenue", cutoff=later).values()))
    snap = w.mem.context_snapshot(w.scope, ctx.snapshot_id)
    w.check("the context that showed them no longer does", "918273" not in (snap.rendered or ""))
    w.check("the derivation is erased too", all(v.erased for v in w.mem.versions(w.scope, [derived.version_id])))


GROUPS: tuple[tuple[str, str, Callable[[World], str | None]], ...] = (
    ("write", "retried, duplicated and raced write", written_once),
    ("write", "injected memory repeated back", echo_refused),
    ("write", "malicious source poisoning retrieval", poison_resisted),
    ("retrieval", "two users with similar facts", scopes_apart),
    ("retrieval", "information never given", never_given),
    ("retrieval", "exact error code", error_code),
    ("retrieval", "semantic paraphrase", paraphrase),
    ("context/use", "fact later corrected", corrected),
    ("context/use", "explicit past point in time", past_point),
    ("task/governance", "source withdrawn", withdrawn),
    ("task/governance", "entity erased", erased),
)


def run(memory: Any, embedder: Any = None) -> dict[str, Any]:
    """Every group in its own scope of one throwaway tenant: status pass, fail or skip."""
    rows = []
    with throwaway(memory, "counterexamples") as tenant:
        for layer, name, group in GROUPS:
            w = World(memory, Scope(tenant=tenant, group=uuid.uuid4().hex[:8]), embedder)
            try:
                skipped = group(w)
            except Exception as exc:  # noqa: BLE001 - a group that raises fails, the others still report
                w.check(f"raised {type(exc).__name__}: {exc}", False)
                skipped = None
            status = "skip" if skipped else "pass" if all(ok for _, ok in w.checks) else "fail"
            rows.append({"layer": layer, "group": name, "status": status, "rungs": list(rungs(embedder)),
                         "checks": [{"check": c, "ok": ok} for c, ok in w.checks] if not skipped else [],
                         "note": skipped})
    return {"tenant": tenant, "embedder": embedder.name if embedder else None, "groups": rows,
            "ok": all(r["status"] != "fail" for r in rows)}


def table(report: dict[str, Any]) -> str:
    lines = [f"{'layer':16} {'group':38} status", "-" * 62]
    for r in report["groups"]:
        lines.append(f"{r['layer']:16} {r['group']:38} {r['status'].upper()}")
        lines += [f"{'':18}x {c['check']}" for c in r["checks"] if not c["ok"]]
        if r["note"]:
            lines.append(f"{'':18}{r['note']}")
    lines.append(f"rungs: {', '.join(rungs(report['embedder']))}"
                 + (f" (embedder {report['embedder']})" if report["embedder"] else ""))
    return "\n".join(lines)
