"""Human-readable text for the CLI and the demo: answers, histories, load reports.

Every value that comes from stored data or input passes through :func:`printable`, so
that what a memory holds cannot drive the terminal that shows it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .models import Answer, FactVersion

# C0 and C1 controls (escape sequences, carriage returns, newlines), the line and
# paragraph separators, and the bidirectional marks that reorder what a line shows.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(value: object) -> str:
    """``value`` as text safe to show on a terminal: each control character is written
    as its escape (``\\x1b``, ``\\n``, ``\\u202e``), so stored data can neither move the
    cursor, recolour or clear the screen, reorder a line, nor start a new one. Human
    output only: ``--json`` keeps the exact text (JSON escapes controls itself)."""
    text = str(value)
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], title: str | None = None) -> str:
    """A plain text table (no colour), wide enough not to wrap ordinary rows; cells are
    :func:`printable` and shown literally (no rich markup)."""
    from rich.console import Console  # here, not at import: lineage reports need printable only
    from rich.table import Table
    from rich.text import Text

    t = Table(*headers, title=title, box=None, show_edge=False, pad_edge=False)
    for row in rows:
        t.add_row(*(Text("" if c is None else printable(c)) for c in row))
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None, force_terminal=False).print(t)
    return buffer.getvalue().rstrip()


def plain_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """The lines of a plain table laid out as :func:`table` lays out one that fits its
    width — each column as wide as its widest cell (in terminal cells), two spaces
    apart, cells :func:`printable` — but without rich, for tables of any length: rich
    takes about 2 ms a row to lay a table out (41 s for a screen of 20,000 entities), this
    a few microseconds. Nothing is wrapped (a long row stays one line) and lines carry no
    trailing spaces."""
    from rich.cells import cell_len

    def width(text: str) -> int:  # terminal cells: wide characters take two
        return len(text) if text.isascii() else cell_len(text)

    cells = [tuple(printable("" if c is None else c) for c in row) for row in rows]
    widths = [max([width(h), *(width(row[i]) for row in cells)]) for i, h in enumerate(headers)]
    for row in (tuple(headers), *cells):
        yield "  ".join(c + " " * (w - width(c)) for c, w in zip(row, widths, strict=True)).rstrip()


def _when(value: Any) -> str:
    return value.isoformat(timespec="seconds") if hasattr(value, "isoformat") else str(value)


def sources(version: FactVersion) -> str:
    return "; ".join(f"{printable(e.source_id)} ({printable(e.kind)}, {e.authority.value}, "
                     f"public {_when(e.available_by)})" for e in version.sources)


def answer(a: Answer) -> str:
    """One answer: status, value, the three times, sources, and what each filter removed."""
    lines = [f"{printable(a.entity)} {printable(a.attribute)} as of cutoff {_when(a.cutoff)}, "
             f"known at {_when(a.known_at)}: {a.status.upper()}"]
    shown = a.shown
    for v in shown:
        lines.append(f"  value {printable(v.value)} {printable(v.unit)} for {v.period.text} "
                     f"(version {v.version_id}, authority {v.authority.value if v.authority else '-'})")
        lines.append(f"    available_by {_when(v.available_by)}  recorded_at {_when(v.recorded_at)}")
        lines.append(f"    sources: {sources(v)}")
        if v.derivation:
            d = v.derivation
            lines.append(f"    derived by {printable(d['method'])} {printable(d['method_version'])} from "
                         + ", ".join(f"{printable(i['role'])}={i['version_id']}" for i in d["inputs"]))
    removed = {k: n for k, n in a.explain.model_dump().items() if n and k != "versions"}
    lines.append(f"  explain: {a.explain.versions} version(s) considered; removed "
                 + (", ".join(f"{k}={n}" for k, n in removed.items()) or "none"))
    return "\n".join(lines)


def versions(items: Sequence[FactVersion]) -> str:
    rows = []
    for v in items:
        records = ", ".join(f"{x.kind}@{_when(x.recorded_at)}" for x in v.lifecycle)
        rows.append((v.period.text, "(erased)" if v.erased else v.value, v.unit,
                     _when(v.available_by), _when(v.recorded_at),
                     ", ".join(e.source_id for e in v.sources), records, v.version_id))
    return table(("period", "value", "unit", "available_by", "recorded_at", "sources",
                  "records", "version"), rows)


def bootstrap_report(report: Any) -> str:
    """A graphmem.offline.BootstrapReport in three lines."""
    seconds = ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items())
    memory = ", ".join(f"{k} {v:.0f} MB" for k, v in report.peak_rss_mb.items())
    files = ", ".join(f"{name.removesuffix('.csv')} {rows}" for name, rows in report.files.items())
    return (f"bootstrapped {report.home} ({'replaced' if report.replaced else 'new'}), serving {report.uri}: "
            f"{report.totals.keys} keys, {report.totals.created} versions, {report.totals.evidence_added} "
            f"evidence added\n  rows imported: {files}\n  {seconds}; peak memory (JVM): {memory}")


def load_report(report: Any) -> str:
    data = report.model_dump()
    rules = ", ".join(f"{k}={n}" for k, n in data.pop("rules", {}).items())
    parts = ", ".join(f"{k}={v}" for k, v in data.items() if k != "file" and v not in ([], {}, None))
    return printable(f"loaded {data['file']}: {parts}; available_by rules: {rules or '-'}")


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason}={n}" for reason, n in counts.items()) or "-"


_SKIPPED_SHOWN = 50  # members skipped that a text report names (--json: all)


def _company_row(c: Any) -> tuple[Any, ...]:
    """A company's line of this run's work, as the totals count it: a company recorded
    before (its report is the earlier load's) read nothing and wrote nothing this time,
    and all its filings were already recorded."""
    if c.status == "recorded":
        return (c.cik, (c.name or "")[:32], c.status, c.sources, c.sources, 0, 0, 0, 0, 0, "-", f"{c.seconds:.1f}")
    return (c.cik, (c.name or "")[:32], c.status, c.sources, c.filings_recorded, c.rows, c.versions_created,
            c.evidence_added, c.rerounded, c.quarantined, _reasons(c.quarantine), f"{c.seconds:.1f}")


def universe_report(report: Any) -> str:
    """A ``load edgar`` report: one line per company, the totals, quarantine by reason,
    the filings with quarantined rows, the failed or missing companies, and the members
    of the inputs skipped as unreadable (the first 50; ``--json`` lists every one)."""
    rows = [_company_row(c) for c in report.companies]
    text = [table(("cik", "company", "status", "filings", "recorded", "rows", "versions", "corroborations",
                   "rerounded", "quarantined", "quarantined by reason", "seconds"), rows)]
    t = report.totals()
    text.append(f"total: {sum(t['companies'].values())} companies ({_reasons(t['companies'])}), "
                + (f"{t['skipped']:,} unreadable file(s) skipped, " if t["skipped"] else "")
                + f"{t['rows']:,} rows, {t['versions_created']:,} versions, {t['evidence_added']:,} corroborations, "
                f"{t['rerounded']:,} re-rounded, {t['quarantined']:,} quarantined, "
                f"{t['filings_recorded']:,} filings already recorded; {t['seconds']:.1f} s"
                + (f" ({t['rows_per_s']:,.0f} rows/s)" if t["rows_per_s"] else ""))
    if t["quarantine"]:
        text.append(f"quarantined by reason: {_reasons(t['quarantine'])}")
    for c in report.companies:
        if c.quarantined_filings:
            text.append(f"CIK {c.cik}: filings with quarantined rows: {', '.join(c.quarantined_filings)}")
        if c.missing_pages:
            text.append(f"CIK {c.cik}: submissions pages not given (their filings keep the filed date): "
                        f"{', '.join(c.missing_pages)}")
        if c.status in ("failed", "missing"):
            text.append(f"CIK {c.cik}: {c.status}: {c.error}")
    text += [f"skipped {s.file}: {s.reason}" for s in report.skipped[:_SKIPPED_SHOWN]]
    if len(report.skipped) > _SKIPPED_SHOWN:
        text.append(f"... and {len(report.skipped) - _SKIPPED_SHOWN:,} more skipped (--json lists them all)")
    return "\n".join(text[:1] + [printable(line) for line in text[1:]])  # the table is escaped cell by cell


def _sources(shown: list[FactVersion], inputs: Any) -> str:
    """The sources of each version shown; for a derived value, its inputs' (the filings)."""
    if inputs:
        return ";".join(dict.fromkeys(e.source_id for v in inputs for e in v.sources))
    return " | ".join(";".join(e.source_id for e in v.sources) for v in shown)


def _note(a: Answer, inputs: Any = None) -> str:
    """What a row rests on: a derived value's input periods; or why it has no single
    value: the candidates of a conflict, or what each filter removed on the entity's
    keys (``cutoff=1``: a version existed, public only later)."""
    if inputs:
        return "from " + ", ".join(v.period.text for v in inputs)
    if a.status == "conflicted":
        return f"{len(a.candidates)} candidates"
    if a.status == "not_found":
        removed = {k: n for k, n in a.explain.model_dump().items() if n and k != "versions"}
        return ", ".join(f"{k}={n}" for k, n in removed.items()) or "nothing reported"
    return ""


SCREEN_FIELDS = ("entity", "status", "value", "unit", "period_start", "period_end", "available_by", "recorded_at",
                 "sources", "version_id", "note")
"""The CSV columns of a screen (:func:`screen_rows`' keys), an empty one's included."""


def screen_rows(s: Any) -> list[dict[str, Any]]:
    """A screen as flat rows, one per entity (:data:`SCREEN_FIELDS`; the table shows most)."""
    out = []
    for a in s.answers:
        shown = a.shown
        first = shown[0] if shown else None
        out.append({
            "entity": a.entity,
            "status": a.status,
            "value": " | ".join(str(v.value) for v in shown),
            "unit": first.unit if first else "",
            "period_start": first.period.start if first and first.period.start else "",
            "period_end": first.period.end if first else "",
            "available_by": " | ".join(_when(v.available_by) for v in shown),
            "recorded_at": " | ".join(_when(v.recorded_at) for v in shown),
            "sources": _sources(shown, s.inputs.get(a.entity)),
            "version_id": " | ".join(v.version_id for v in shown),
            "note": _note(a, s.inputs.get(a.entity)),
        })
    return out


SCREEN_COLUMNS = ("entity", "status", "value", "unit", "period", "available_by", "sources", "note")


def screen_table_rows(s: Any) -> list[tuple[Any, ...]]:
    """A screen's rows as its table shows them (:data:`SCREEN_COLUMNS`)."""
    return [(r["entity"], r["status"], r["value"], r["unit"],
             f"{r['period_start']}..{r['period_end']}" if r["period_start"] else r["period_end"],
             r["available_by"], r["sources"], r["note"]) for r in screen_rows(s)]


def screen(s: Any) -> str:
    """A screen as a table (:func:`plain_table`: any number of rows, quickly), under a line
    saying what was asked and how many were found."""
    asked = s.frame or (s.period.text if s.period else "each entity's latest window")  # else: an LTM screen
    counts = ", ".join(f"{n} {status}" for status, n in s.counts().items())
    head = (f"{printable(s.attribute)}{' (' + printable(s.definition) + ')' if s.definition else ''} "
            f"for {printable(asked)} as of cutoff "
            f"{_when(s.cutoff)}, known at {_when(s.known_at)}: {len(s.answers)} entities "
            f"({'as given' if s.universe == 'entities' else 'every entity that had reported it'}); {counts}")
    if s.unknown:
        head += f"\nnot in this scope: {printable(', '.join(s.unknown))}"
    return head + "\n" + "\n".join(plain_table(SCREEN_COLUMNS, screen_table_rows(s)))
