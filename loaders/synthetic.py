"""A synthetic EDGAR universe in the SEC's own schema, for tests and benchmarks.

``SyntheticUniverse(companies=200, filings=40, concepts=250, seed=7)`` describes
companies x filings x concepts, deterministic in its fields (a CRC-32 of each
coordinate decides every value), and writes them as the SEC serves them:
``companyfacts.zip`` and ``submissions.zip`` (:meth:`write_zips`), or folders of
``CIK##########.json`` files (:meth:`write_folders`), plus ``company_tickers.json``.
It holds one company's text at a time, so universes of millions of rows are written in
flat memory.

What is in it, so that every path of the loader is exercised:

* quarterly filings (10-Q, a 10-K every fourth) or, for every seventh company, a
  foreign filer (6-K, a 20-F every fourth) reporting ``ifrs-full`` in ``TWD``; each
  filing reports every concept for its period and, as a comparative, the same period
  one year earlier (two rows per concept and filing);
* restatements: a comparative differs from the value first reported (``restated``);
* re-roundings: from two thirds of its filings on, a company reports in thousands, so
  comparatives first reported to the unit come back rounded (the loader keeps the
  precise value and adds evidence);
* custom units (``segment``, ``reporting_unit``, ``Stock_options``, ``case_filed``),
  ``shares``, ``USD/shares`` with cents, and a ``dei`` concept;
* submissions with a ``recent`` block of the last ``recent`` filings and the older ones
  in a paged file (``CIK##########-submissions-001.json``, no top-level ``cik``); the
  first filing in no submissions file at all (filed-date rule); ``cik`` as a number, as
  digits and as zero-padded digits;
* after-hours acceptances: every fifth filing was accepted after 17:30 New York time on
  the business day before its ``filed`` date (a Friday evening for a Monday date);
* ``malformed`` rows per company that cannot be facts, one reason after another
  (:data:`MALFORMED`), so that a load quarantines exactly :meth:`expected_quarantine`.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo

NEW_YORK = ZoneInfo("America/New_York")
FIRST_YEAR = 2001
CUSTOM_UNITS = ("segment", "reporting_unit", "Stock_options", "case_filed")
#: The malformed rows, in the order a company gets them, with the reason each is
#: quarantined for (see graphmem.loaders.quarantine.REASONS).
MALFORMED = ("missing-key", "not-a-number", "bad-date", "impossible-period", "bad-accession")


def _h(*parts: object) -> int:
    return zlib.crc32(":".join(map(str, parts)).encode())


def _quarter_end(q: int) -> dt.date:
    year, month = FIRST_YEAR + q // 4, 3 * (q % 4) + 3
    return dt.date(year + (month == 12), month % 12 + 1, 1) - dt.timedelta(days=1)


def _business_day(day: dt.date, step: int) -> dt.date:
    """The nearest weekday from ``day`` in direction ``step`` (day itself if a weekday)."""
    while day.weekday() >= 5:
        day += dt.timedelta(days=step)
    return day


@dataclass(frozen=True)
class Filing:
    """One synthetic filing of one company."""

    q: int
    accession: str
    form: str
    end: dt.date
    filed: dt.date
    accepted: dt.datetime  # UTC
    after_hours: bool


@dataclass(frozen=True)
class SyntheticUniverse:
    """The universe's shape; everything else follows from it (see the module docstring)."""

    companies: int = 10
    filings: int = 8
    concepts: int = 20
    seed: int = 0
    restated: float = 0.03
    malformed: int = 1
    recent: int = 6
    first_cik: int = 9_100_001

    def __post_init__(self) -> None:
        if self.companies < 1 or self.filings < 2 or self.concepts < 4:
            raise ValueError("a synthetic universe needs a company, two filings and four concepts")

    # ------------------------------------------------------------ identity

    def ciks(self) -> list[int]:
        return [self.first_cik + n for n in range(self.companies)]

    def foreign(self, cik: int) -> bool:
        return (cik - self.first_cik) % 7 == 6

    def ticker(self, cik: int) -> str:
        return f"SYN{cik - self.first_cik:04d}"

    def rows_per_company(self) -> int:
        return self.filings * self.concepts * 2

    @property
    def rows(self) -> int:
        """Rows in all companyfacts files, malformed ones included."""
        return self.companies * (self.rows_per_company() + self.malformed)

    def filing(self, cik: int, q: int) -> Filing:
        annual = q % 4 == 3
        form = ("20-F" if annual else "6-K") if self.foreign(cik) else ("10-K" if annual else "10-Q")
        end = _quarter_end(q)
        filed = _business_day(end + dt.timedelta(days=60 if annual else 35 + _h(self.seed, cik, q) % 5), 1)
        after_hours = q % 5 == 4
        if after_hours:  # accepted the business day before, after EDGAR's 17:30 cut-off
            day = _business_day(filed - dt.timedelta(days=1), -1)
            local = dt.datetime.combine(day, dt.time(17, 45 + _h(self.seed, "m", cik, q) % 14), NEW_YORK)
        else:
            local = dt.datetime.combine(filed, dt.time(8 + _h(self.seed, "t", cik, q) % 9, 5), NEW_YORK)
        accession = f"{cik:010d}-{filed.year % 100:02d}-{q + 1:06d}"
        return Filing(q, accession, form, end, filed, local.astimezone(dt.UTC), after_hours)

    def concept(self, cik: int, c: int) -> tuple[str, str, str]:
        """(taxonomy, concept, unit) of concept number ``c``."""
        if c == 0:
            return "dei", "EntityCommonStockSharesOutstanding", "shares"
        taxonomy, money = ("ifrs-full", "TWD") if self.foreign(cik) else ("us-gaap", "USD")
        if c % 10 == 1:
            unit = CUSTOM_UNITS[(c // 10) % len(CUSTOM_UNITS)]
        elif c % 10 == 2:
            unit = f"{money}/shares"
        else:
            unit = money
        return taxonomy, f"SyntheticConcept{c:04d}", unit

    # ------------------------------------------------------------ values

    def rounds_from(self) -> int:
        """The first filing reported in thousands."""
        return (2 * self.filings) // 3

    def value(self, cik: int, c: int, period_q: int, instant: bool, filing_q: int) -> str:
        """The JSON number text that filing ``filing_q`` reports for a period."""
        _, _, unit = self.concept(cik, c)
        first = period_q == filing_q  # the period's own filing, not a comparative
        restated = not first and _h(self.seed, "r", cik, c, period_q, instant) % 10_000 < self.restated * 10_000
        h = _h(self.seed, "v", cik, c, period_q, instant)
        if unit.endswith("/shares"):
            return str(Decimal(h % 2000 - 500 + (37 if restated else 0)) / 100)
        if unit in CUSTOM_UNITS:
            return str(1 + h % 12 + (1 if restated else 0))
        value = 10_000_000 + h % 9_000_000_000 + (1 + h % 99_999 if restated else 0)
        if filing_q >= self.rounds_from():
            value = round(value, -3)  # in thousands from then on
        return str(value)

    # ------------------------------------------------------------ companyfacts

    def _rows(self, cik: int, c: int) -> Iterator[str]:
        taxonomy, _, unit = self.concept(cik, c)
        for q in range(self.filings):
            f = self.filing(cik, q)
            fy, fp = f.end.year, ("FY" if q % 4 == 3 else f"Q{q % 4 + 1}")
            for period_q in (q, q - 4):
                end = _quarter_end(period_q)
                instant = c % 2 == 0
                months = end.year * 12 + end.month - 3  # the quarter's first month, counted from year 0
                start = None if instant else dt.date(months // 12, months % 12 + 1, 1)
                head = f'{{"start":"{start}",' if start else "{"
                yield (f'{head}"end":"{end}","val":{self.value(cik, c, period_q, instant, q)},'
                       f'"accn":"{f.accession}","fy":{fy},"fp":"{fp}","form":"{f.form}","filed":"{f.filed}"}}')

    def _malformed(self, cik: int) -> Iterator[tuple[int, str]]:
        """(concept, row text) of the company's malformed rows."""
        f = self.filing(cik, self.filings - 1)
        for n in range(self.malformed):
            reason = MALFORMED[n % len(MALFORMED)]
            row = {"end": str(f.end), "val": 5, "accn": f.accession, "fy": None, "fp": None,
                   "form": f.form, "filed": str(f.filed)}
            if reason == "missing-key":
                del row["end"]
            elif reason == "not-a-number":
                row["val"] = "5"
            elif reason == "bad-date":
                row["end"] = f"{f.end.year}-02-30"
            elif reason == "impossible-period":
                row["start"] = str(f.end + dt.timedelta(days=1))
            else:
                row["accn"] = "not-an-accession"
            yield 3 + n % max(1, self.concepts - 3), json.dumps(row)

    def expected_quarantine(self) -> Counter[str]:
        """Rows a load of one company quarantines, by reason."""
        return Counter(MALFORMED[n % len(MALFORMED)] for n in range(self.malformed))

    def companyfacts(self, cik: int, out: IO[str]) -> None:
        """Write one company's companyfacts JSON to ``out``."""
        cik_field = str(cik) if cik % 3 == 0 else f'"{cik}"' if cik % 3 == 1 else f'"{cik:010d}"'
        out.write(f'{{"cik":{cik_field},"entityName":"Synthetic Company {cik}","facts":{{')
        bad: dict[int, list[str]] = {}
        for c, text in self._malformed(cik):
            bad.setdefault(c, []).append(text)
        by_taxonomy: dict[str, list[int]] = {}
        for c in range(self.concepts):
            by_taxonomy.setdefault(self.concept(cik, c)[0], []).append(c)
        for t, (taxonomy, concepts) in enumerate(by_taxonomy.items()):
            out.write(("," if t else "") + json.dumps(taxonomy) + ":{")
            for n, c in enumerate(concepts):
                _, name, unit = self.concept(cik, c)
                label = "null" if c % 3 else json.dumps(f"Synthetic concept {c}")
                out.write(("," if n else "") + f'"{name}":{{"label":{label},"description":null,'
                          f'"units":{{{json.dumps(unit)}:[')
                out.write(",".join([*self._rows(cik, c), *bad.get(c, [])]))
                out.write("]}}")
            out.write("}")
        out.write("}}")

    # ------------------------------------------------------------ submissions

    def _columns(self, filings: list[Filing]) -> dict[str, list[object]]:
        return {
            "accessionNumber": [f.accession for f in filings],
            "filingDate": [str(f.filed) for f in filings],
            "reportDate": [str(f.end) for f in filings],
            "acceptanceDateTime": [f.accepted.strftime("%Y-%m-%dT%H:%M:%S.000Z") for f in filings],
            "form": [f.form for f in filings],
            "primaryDocument": [f"doc{f.q}.htm" for f in filings],
        }

    def submissions(self, cik: int) -> tuple[dict[str, object], dict[str, object] | None]:
        """The main submissions JSON and its page (None when every filing is recent).
        The first filing is in neither (its availability comes from its filed date)."""
        listed = [self.filing(cik, q) for q in range(self.filings - 1, 0, -1)]  # newest first
        recent, older = listed[:self.recent], listed[self.recent:]
        page_name = f"CIK{cik:010d}-submissions-001.json"
        main: dict[str, object] = {
            "cik": str(cik) if cik % 2 else f"{cik:010d}", "entityType": "operating",
            "name": f"Synthetic Company {cik}", "tickers": [self.ticker(cik)], "exchanges": ["Nasdaq"],
            "filings": {"recent": self._columns(recent), "files": [
                {"name": page_name, "filingCount": len(older), "filingFrom": str(older[-1].filed),
                 "filingTo": str(older[0].filed)}] if older else []},
        }
        return main, (self._columns(older) if older else None)

    def tickers(self) -> dict[str, dict[str, object]]:
        """The SEC's company_tickers.json for this universe."""
        return {str(n): {"cik_str": cik, "ticker": self.ticker(cik), "title": f"Synthetic Company {cik}"}
                for n, cik in enumerate(self.ciks())}

    # ------------------------------------------------------------ writing

    def write_zips(self, folder: str | Path) -> dict[str, Path]:
        """``companyfacts.zip``, ``submissions.zip`` and ``company_tickers.json`` in
        ``folder``, as the SEC's bulk downloads; returns their paths."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {"companyfacts": folder / "companyfacts.zip", "submissions": folder / "submissions.zip",
                 "tickers": folder / "company_tickers.json"}
        with zipfile.ZipFile(paths["companyfacts"], "w", zipfile.ZIP_DEFLATED, compresslevel=1) as facts, \
                zipfile.ZipFile(paths["submissions"], "w", zipfile.ZIP_DEFLATED, compresslevel=1) as subs:
            for cik in self.ciks():
                with facts.open(f"CIK{cik:010d}.json", "w") as raw, _text(raw) as out:
                    self.companyfacts(cik, out)
                main, page = self.submissions(cik)
                subs.writestr(f"CIK{cik:010d}.json", json.dumps(main))
                if page is not None:
                    subs.writestr(f"CIK{cik:010d}-submissions-001.json", json.dumps(page))
        paths["tickers"].write_text(json.dumps(self.tickers()))
        return paths

    def write_folders(self, folder: str | Path) -> dict[str, Path]:
        """``companyfacts/`` and ``submissions/`` folders of the same files, and
        ``company_tickers.json``, in ``folder``; returns their paths."""
        folder = Path(folder)
        paths = {"companyfacts": folder / "companyfacts", "submissions": folder / "submissions",
                 "tickers": folder / "company_tickers.json"}
        paths["companyfacts"].mkdir(parents=True, exist_ok=True)
        paths["submissions"].mkdir(parents=True, exist_ok=True)
        for cik in self.ciks():
            with (paths["companyfacts"] / f"CIK{cik:010d}.json").open("w", encoding="utf-8") as out:
                self.companyfacts(cik, out)
            main, page = self.submissions(cik)
            (paths["submissions"] / f"CIK{cik:010d}.json").write_text(json.dumps(main))
            if page is not None:
                (paths["submissions"] / f"CIK{cik:010d}-submissions-001.json").write_text(json.dumps(page))
        paths["tickers"].write_text(json.dumps(self.tickers()))
        return paths


def _text(raw: IO[bytes]) -> IO[str]:
    return io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
