"""What the filings loaders share: the unit whitelist, the load report, the progress bar,
and the one write per filing.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from graphmem.errors import InputError
from graphmem.models import Entity, FactIn, Scope, Source, WriteReport

# ------------------------------------------------------------------ units

#: ISO 4217 currency codes (active ones, plus a few historical codes that still occur
#: in filings' comparative periods).
ISO_CURRENCIES = frozenset(
    """
    AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD BND BOB BRL BSD
    BTN BWP BYN BYR BZD CAD CDF CHF CLF CLP CNH CNY COP CRC CUC CUP CVE CZK DJF DKK DOP
    DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HRK HTG HUF IDR
    ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD
    LSL LTL LVL LYD MAD MDL MGA MKD MMK MNT MOP MRO MRU MUR MVR MWK MXN MYR MZN NAD NGN
    NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG
    SEK SGD SHP SLE SLL SOS SRD SSP STD STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD
    TZS UAH UGX USD UYU UZS VEF VES VND VUV WST XAF XAG XAU XCD XDR XOF XPF YER ZAR ZMW
    ZWL
    """.split()  # noqa: SIM905 - a readable table
)

#: Non-currency measures that occur in SEC company facts (XBRL ``xbrli:shares``,
#: ``xbrli:pure`` and UTR measures as companyfacts names them).
MEASURES = frozenset(
    """
    shares pure shares_unit D Y years Months Hours sqft sqm acre ha km mi m ft
    MW MWh GW GWh kW kWh Wh bbl Mcf MMcf MMBbls MMBTU Boe MBoe t lb oz ozt gal l
    """.split()  # noqa: SIM905 - a readable table
)

#: Company-defined count measures (``Segment``, ``Plaintiff``, ``PartnershipUnit``):
#: by XBRL convention a singular CamelCase noun of letters only.
_CUSTOM_COUNT = re.compile(r"[A-Z][a-z]+(?:[A-Z][a-z]+)*")


def _known_measure(part: str) -> bool:
    return part in ISO_CURRENCIES or part in MEASURES or bool(_CUSTOM_COUNT.fullmatch(part))


def unit_ok(unit: Any) -> bool:
    """The unit whitelist: ``M`` or ``M/M`` where each ``M`` is an ISO 4217 currency
    (``USD``, ``EUR``), a standard measure (``shares``, ``pure``, ``D``, ``sqft`` ...)
    or a company-defined CamelCase count (``Segment``). ``USD``, ``shares``,
    ``USD/shares``, ``pure``, ``EUR/shares``, ``USD/PartnershipUnit`` pass; ``usd``,
    ``US Dollars``, ``XYZ``, ``USD/`` and ``$`` do not.
    """
    if not isinstance(unit, str) or not unit:
        return False
    parts = unit.split("/")
    return len(parts) <= 2 and all(_known_measure(p) for p in parts)


def check_unit(unit: Any, where: str) -> str:
    if not unit_ok(unit):
        raise InputError(
            where,
            f"unknown unit {unit!r}: expected an ISO 4217 currency, shares, pure, a standard "
            "measure or a CamelCase count, optionally per another (e.g. USD/shares)",
        )
    return unit


# ------------------------------------------------------------------ report


class LoadReport(BaseModel):
    """What one load did. ``versions_created + evidence_added + unchanged`` counts the
    (fact, source) assertions written; a second load of the same file has only
    ``unchanged`` ones."""

    model_config = ConfigDict(extra="forbid")

    file: str
    entities: int = 0
    sources: int = 0
    sources_recorded: int = 0
    rows: int = 0
    assertions: int = 0
    duplicates: int = 0
    rerounded: int = 0
    versions_created: int = 0
    evidence_added: int = 0
    unchanged: int = 0
    rules: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0

    def add_rule(self, rule: str) -> None:
        counts = Counter(self.rules)
        counts[rule] += 1
        self.rules = dict(sorted(counts.items()))


# ------------------------------------------------------------------ progress


@contextmanager
def progress(description: str, total: int, enabled: bool | None = None):
    """A rich progress bar on a terminal only; yields ``advance()``.

    ``enabled=None`` shows it when stderr is a terminal; pipes, CI logs and pytest
    get nothing, and do not import rich (a tenth of a second).
    """
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        yield lambda n=1: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    show = console.is_terminal if enabled is None else enabled
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not show,
        transient=False,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda n=1: bar.advance(task, n)


# ------------------------------------------------------------------ the write


class Writer(Protocol):
    """Where a loader writes: a :class:`graphmem.Memory`, or an offline build of a new
    database (:class:`graphmem.bulk.Build`), which takes the same calls."""

    def scope(self, scope: Any) -> Scope: ...

    def put_entity(self, scope: Scope, entity: Entity) -> None: ...

    def record(self, scope: Scope, *, sources: Iterable[Source] = (),
               items: Iterable[FactIn] = ()) -> WriteReport: ...


def write_filing(
    mem: Writer, scope: Scope, source: Source, items: Sequence[FactIn], where: str
) -> WriteReport:
    """Record ``source`` and assert ``items`` in ONE write transaction (``Memory.record``):
    a failure leaves neither the source nor any fact of that filing. Errors are
    re-raised naming the file and filing (``where``) before graphmem's own location."""
    try:
        return mem.record(scope, sources=[source], items=items)
    except InputError as exc:
        raise InputError(f"{where}: {exc.where}", exc.reason) from exc
