"""The filings demo (the README's main job), on whatever Neo4j the CLI connected to.

It loads real SEC and KPI fixtures into a fresh tenant, shows a real restatement,
answers the essay's question — revenue retained per $100 of payment volume, PayPal
and Shopify, as of 2025-10-30 — with each number's window and source documents,
shows how the Shopify answer changes as of 2025-11-05, retracts one filing and
prints the impact and recompute order, and draws one answer's lineage to a PNG.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import networkx as nx

from . import export, render
from .errors import InputError
from .loaders import kpi, metrics, sec
from .memory import Memory
from .models import Period, Scope

UTC = dt.UTC
COMPANIES = {
    "PayPal": ("cik:1633917", "TransactionRevenues", "TransactionExpense", "TotalPaymentVolume"),
    "Shopify": ("cik:1594805", "MerchantSolutionsRevenue", "CostOfMerchantSolutions",
                "GrossMerchandiseVolume"),
}
WITHDRAWN = "0001594805-25-000073"  # Shopify's Q2 2025 10-Q


def default_fixtures() -> Path:
    path = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
    if not path.is_dir():
        raise InputError("--fixtures", f"fixtures not found at {path}; pass --fixtures DIR")
    return path


def _end_of(day: str) -> dt.datetime:
    return dt.datetime.combine(dt.date.fromisoformat(day), dt.time(23, 59, 59), UTC)


def _documents(mem: Memory, scope: Scope, version_id: str) -> list[str]:
    """The filings an answer is built on: the source nodes upstream of it."""
    graph = mem.lineage(scope, version_id, "upstream")
    return sorted(n[2:] for n, d in graph.nodes(data=True) if d.get("kind") == "source")


def _metric_table(mem: Memory, scope: Scope, cutoff: dt.datetime,
                  names: tuple[str, ...]) -> dict[str, metrics.Retained]:
    results = {}
    rows = []
    for name in names:
        entity, revenue, cost, volume = COMPANIES[name]
        r = metrics.retained_per_100(mem, scope, entity=entity, revenue=revenue, cost=cost,
                                     volume=volume, cutoff=cutoff)
        results[name] = r
        rows.append((name, f"${r.per_100:.2f}", f"{r.window.start} .. {r.window.end}",
                     f"{r.revenue.value / 10**6:,.0f}", f"{r.cost.value / 10**6:,.0f}",
                     f"{r.volume.value / 10**6:,.0f}",
                     ", ".join(_documents(mem, scope, r.version.version_id))))
    return results, render.table(
        ("company", "per $100", "LTM window", "revenue $m", "cost $m", "volume $m",
         "source documents"), rows)


def run(mem: Memory, fixtures: Path | None, out: Path, echo: Callable[[str], None]) -> None:
    fixtures = fixtures or default_fixtures()
    mem.migrate()
    info = mem.server_info()
    echo(f"Neo4j {info.get('version')} {info.get('edition')}, graphmem schema "
         f"v{info['schema_version']}")
    scope = Scope(tenant=f"demo-{dt.datetime.now(UTC):%Y%m%dT%H%M%S}")
    echo(f"tenant {scope.tenant}\n")

    echo("1. Loading filings as graph sources")
    echo(render.load_report(sec.load(
        mem, scope, fixtures / "companyfacts-CIK0001318605-tesla.json",
        fixtures / "submissions-CIK0001318605-tesla.json")))
    echo(render.load_report(kpi.load(mem, scope, fixtures / "kpi-pypl-shop.csv")))

    echo("\n2. A real restatement: Tesla us-gaap:Assets at 2015-12-31")
    for day in ("2016-05-09", "2016-05-11"):
        a = mem.as_of(scope, entity="cik:1318605", attribute="us-gaap:Assets", unit="USD",
                      period=Period(end=dt.date(2015, 12, 31)), cutoff=_end_of(day))
        v = a.version
        echo(f"   as of {day}: {v.value:,} USD, from "
             f"{', '.join(f'{e.source_id} ({e.kind}, public {e.available_by:%Y-%m-%d %H:%M}Z)' for e in v.sources)}"
             if v else f"   as of {day}: {a.status}")

    cutoff = _end_of("2025-10-30")
    echo("\n3. Revenue retained per $100 of volume, LTM, using only what was public on "
         "2025-10-30")
    first, text = _metric_table(mem, scope, cutoff, ("PayPal", "Shopify"))
    echo(text)
    echo("   The windows differ: Shopify's Q3 2025 10-Q was accepted on 2025-11-04.")

    echo("\n4. The same question as of 2025-11-05")
    _, text = _metric_table(mem, scope, _end_of("2025-11-05"), ("Shopify",))
    echo(text)

    out.mkdir(parents=True, exist_ok=True)
    png = out / "lineage-paypal.png"
    graph = mem.lineage(scope, first["PayPal"].version.version_id, "upstream")
    export.write(graph, "png", png)
    echo(f"\n5. Lineage of PayPal's answer: {graph.number_of_nodes()} nodes, "
         f"{graph.number_of_edges()} edges, {len(list(nx.topological_generations(graph)))} "
         f"layers -> {png}")

    echo(f"\n6. Filing {WITHDRAWN} (Shopify Q2 2025 10-Q) is withdrawn: impact and "
         "recompute order")
    echo(mem.retract_source(scope, WITHDRAWN, reason="demo: filing withdrawn").table())
    after = mem.as_of(scope, entity=COMPANIES["Shopify"][0], attribute="RetainedPer100Volume",
                      cutoff=cutoff)
    echo(f"   Shopify's 2025-10-30 answer now: {after.status}; with known_at before the "
         "retraction it is still there (audit).")
