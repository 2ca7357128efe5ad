"""``graphmem panel``: a point-in-time panel from the command line (registered in
graphmem/cli.py).

``--frames`` takes frames separated by commas, or a range of one kind:
``CY2019Q1..CY2024Q4`` (every quarter), ``CY2019..CY2024`` (every year),
``CY2019Q1I..CY2024Q4I`` (every quarter-end instant). ``--cutoffs`` takes
``FROM..TO:quarterly`` (every quarter end from FROM to TO; also ``monthly``,
``yearly``; each the end of its day in UTC), or a file of cutoffs, one ISO date or
datetime per line (``#`` comments skipped). A range whose FROM is after its TO, or one
of whose ends is no frame or no date, is refused naming the option. The web view's
panel page (graphmem/ui/pages.py) parses its ``frames=`` and ``cutoffs=`` here too, a
comma list of times in place of a file (a web request names no file on the server).
"""

from __future__ import annotations

import calendar
import csv
import datetime as dt
import io
import re
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import InputError
from ..screen import Selection
from ..values import parse_time
from . import lineitems
from .panel import LATEST, Panel

_STEPS = {"monthly": 1, "quarterly": 3, "yearly": 12}
_MONTHS = {"monthly": "every month", "quarterly": "March, June, September, December", "yearly": "December"}
_RANGE = re.compile(r"(?P<from>\d{4}-\d{2}-\d{2})\.\.(?P<to>\d{4}-\d{2}-\d{2}):(?P<step>\w+)")
_FRAME = re.compile(r"CY(\d{4})(?:Q([1-4]))?(I?)", re.IGNORECASE)


def _month_end(year: int, month: int) -> dt.date:
    """The last day of a month (of 9999's December too: no day after it is made)."""
    return dt.date(year, month, calendar.monthrange(year, month)[1])


def _day(text: str, name: str) -> dt.date:
    """A range's FROM or TO (2019-02-30 is refused naming ``name``, not a crash)."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError as exc:
        raise InputError(name, f"{text!r} is not a date: {exc}") from exc


def cutoffs(text: str, name: str = "--cutoffs", *, files: bool = True) -> list[dt.datetime]:
    """``--cutoffs``: a stepped range of month ends, or a file of times (without ``files``,
    a comma list of times instead); a bad one raises InputError naming ``name``."""
    match = _RANGE.fullmatch(text.strip())
    if match is None and not files:
        times = [parse_time(x.strip(), name) for x in text.split(",") if x.strip()]
        return [x for x in times if x is not None]
    if match is None:
        try:
            lines = Path(text).read_text(encoding="utf-8-sig").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(name, f"neither FROM..TO:quarterly (monthly, yearly) nor a readable "
                                   f"file of times: {exc}") from exc
        times = [parse_time(line.strip(), f"{name}: {text} line {n}") for n, line in enumerate(lines, 1)
                 if line.strip() and not line.strip().startswith("#")]
        return [x for x in times if x is not None]
    if match["step"] not in _STEPS:
        raise InputError(name, f"the step must be one of {', '.join(_STEPS)}; got {match['step']!r}")
    first, last = _day(match["from"], name), _day(match["to"], name)
    if first > last:
        raise InputError(name, f"{text.strip()!r}: FROM {first} is after TO {last}")
    out = []
    for n in range(first.year * 12 + first.month - 1, last.year * 12 + last.month):  # its months
        day = _month_end(n // 12, n % 12 + 1)
        if first <= day <= last and (n % 12 + 1) % _STEPS[match["step"]] == 0:
            out.append(dt.datetime.combine(day, dt.time.max, dt.UTC))
    if not out:  # else the panel would say only that it has no cutoff
        raise InputError(name, f"{text.strip()!r}: no {match['step']} month end from {first} to {last} "
                               f"(a step's cutoffs are the last days of its months: {_MONTHS[match['step']]})")
    return out


def frames(text: str, name: str = "--frames") -> list[str]:
    """``--frames``: a comma list, or a range of one kind (see the module docstring); a
    bad range raises InputError naming ``name``."""
    if ".." not in text:
        return [f.strip() for f in text.split(",") if f.strip()]
    parts = text.split("..")
    a, b = (_FRAME.fullmatch(x.strip()) for x in (parts if len(parts) == 2 else ("", "")))
    if a is None or b is None or bool(a[2]) != bool(b[2]) or bool(a[3]) != bool(b[3]):
        raise InputError(name, f"{text!r}: a range joins two frames of one kind, e.g. CY2019Q1..CY2024Q4")
    for end in (a, b):  # each a frame (CY2019I names no quarter; years 1000 to 9998)
        try:
            Selection.frame(end[0])
        except InputError as exc:
            raise InputError(name, exc.reason) from exc
    first, last = (int(x[1]) * 4 + int(x[2] or 1) - 1 for x in (a, b))
    if first > last:
        raise InputError(name, f"{text!r}: FROM {a[0].upper()} is after TO {b[0].upper()}")
    if not a[2]:
        return [f"CY{y}" for y in range(int(a[1]), int(b[1]) + 1)]
    return [f"CY{n // 4}Q{n % 4 + 1}{a[3].upper()}" for n in range(first, last + 1)]


def columns(panel: Panel) -> list[str]:
    """The CSV and table columns of a panel (:func:`rows`' keys), an empty one's included."""
    return ["cutoff", "frame", "entity", "status", "value", "unit", "period", "available_by", "filings", "version_id",
            *(["concept", "skipped"] if panel.item else []),
            *(["first_value", "restated"] if panel.first_reported else [])]


def rows(panel: Panel) -> list[dict[str, Any]]:
    """A panel as flat rows (:func:`columns`)."""
    return [{"cutoff": c.cutoff.isoformat(), "frame": c.frame or "", "entity": c.entity, "status": c.status,
             "value": "" if c.value is None else str(c.value), "unit": c.unit or "",
             "period": c.period.text if c.period else "",
             "available_by": c.available_by.isoformat() if c.available_by else "",
             "filings": " ".join(c.filings), "version_id": c.version_id or "",
             **({"concept": c.concept or "", "skipped": "; ".join(c.skipped)} if panel.item else {}),
             **({"first_value": "" if c.first_value is None else str(c.first_value),
                 "restated": "" if c.restated is None else str(c.restated).lower()} if panel.first_reported else {})}
            for c in panel.cells]


def emit(panel: Panel, fmt: str, out: Path | None) -> None:
    """Write the panel as a table, CSV, JSON or Parquet (to ``out``, or standard output)."""
    if fmt == "parquet":
        assert out is not None, "checked before the panel was read"
        from .frames import write_parquet

        write_parquet(panel, out)
        click.echo(f"wrote {out}")
        return
    if fmt == "json":
        text = panel.model_dump_json(indent=2)
    elif fmt == "csv":
        buffer = io.StringIO()
        table = rows(panel)
        writer = csv.DictWriter(buffer, fieldnames=columns(panel))
        writer.writeheader()
        writer.writerows(table)
        text = buffer.getvalue()
    else:
        from ..render import table as render_table

        data = rows(panel)
        text = render_table(tuple(columns(panel)), [tuple(r.values()) for r in data]) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}")


def _in_a_folder(ctx: click.Context, param: click.Parameter, path: Path | None) -> Path | None:
    """graphmem.cli's check of a file an option writes (imported when used: that module
    registers this one's command at its end)."""
    from ..cli import _in_a_folder as check

    return check(ctx, param, path)


@click.command("panel")
@click.option("--attribute", help="e.g. us-gaap:Revenues")
@click.option("--item", help="A standardized line item instead (revenue, net_income, total_assets ...), its "
              "concept chosen per cell (a read: nothing is recorded unless --record).")
@click.option("--record", is_flag=True, help="With --item, read as of now: record each value as a derivation "
              "of its reported fact (lineage, impact), in one transaction.")
@click.option("--family", "family_file", type=click.Path(dir_okay=False, path_type=Path),
              help="The line-item family file --item names (default: the built-in one).")
@click.option("--frames", "frames_text", help="CY2019Q1..CY2024Q4, or frames separated by commas.")
@click.option("--latest", type=click.Choice(list(LATEST)), help="Each entity's latest period of this kind instead.")
@click.option("--cutoffs", "cutoffs_text", required=True,
              help="FROM..TO:quarterly (monthly, yearly), or a file of ISO times, one per line.")
@click.option("--known-at", help="As recorded by then (ISO); default now.")
@click.option("--entities", "entities_file", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
              help="The universe: entity ids, one per line (default: every entity that had reported it).")
@click.option("--unit", help="Only this unit (default: any, but one per frame and cutoff).")
@click.option("--first-reported", is_flag=True, help="Add each cell's value as first reported and a restated flag.")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "parquet", "json"]), default="table",
              show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), callback=_in_a_folder,
              help="Write here (required for parquet).")
@click.option("--scope", "scope_keys", multiple=True, metavar="KEY=VALUE", help="Scope keys beside the tenant.")
@click.option("--tenant", envvar="GRAPHMEM_TENANT", default="default", show_default=True,
              help="Tenant ($GRAPHMEM_TENANT).")
def panel_cmd(attribute: str | None, item: str | None, family_file: Path | None, frames_text: str | None,
              latest: str | None, cutoffs_text: str,
              known_at: str | None, entities_file: Path | None, unit: str | None, first_reported: bool, record: bool,
              fmt: str, out: Path | None, scope_keys: tuple[str, ...], tenant: str) -> None:
    """A screen at every frame (or each entity's latest) and every cutoff, without
    look-ahead; exit 4 when no cell has a value."""
    from ..cli import _connect, _entity_ids, _scope

    if (attribute is None) == (item is None):
        raise InputError("--attribute", "give exactly one of --attribute or --item")
    if (frames_text is None) == (latest is None):
        raise InputError("--frames", "give exactly one of --frames (e.g. CY2024Q3) or --latest")
    asked: Any = attribute if item is None else lineitems.load(family_file)[item]
    if record and (item is None or known_at is not None):
        raise InputError("--record", "records a line item's panel (--item) read as of now (no --known-at)")
    if fmt == "parquet" and out is None:
        raise InputError("--out", "a Parquet panel is written to a file: pass --out FILE")
    with _connect() as mem:
        result = mem.panel(_scope(tenant, scope_keys), attribute=asked,
                           frames=frames(frames_text) if frames_text else None, latest=latest,
                           cutoffs=cutoffs(cutoffs_text), known_at=parse_time(known_at, "--known-at"),
                           entities=_entity_ids(entities_file), unit=unit, first_reported=first_reported)
        if record:
            lineitems.record(mem, _scope(tenant, scope_keys), asked, result)
    emit(result, fmt, out)
    if not any(c.status != "not_found" for c in result.cells):
        sys.exit(4)
