"""graphmem results as Arrow tables, pandas and polars DataFrames (the optional extra
``dataframes``: ``pip install 'graphmem[dataframes]'``).

Arrow is the bridge: ``to_arrow`` builds one typed table, and pandas and polars read it
(imported only when asked for; a missing one raises ``ImportError`` naming the extra).

Rows: a screen's answers, a panel's cells, ``facts_as_of``'s answers (one row per
answer) or a history's versions (one row per version). Columns, typed:

- ``value``: ``decimal128(38, 10)`` - exact for every figure with at most 28 digits
  before the point and 10 after, 1e27 included (checked in a 38-digit context; a value
  that does not fit, 1e28 or 1e-11, raises ``InputError``: ask
  ``decimals="float"``, a ``float64`` column, instead); null when the answer has no
  single value or the value is not a number (then ``value_text`` holds it as text);
- times (``cutoff``, ``known_at``, ``available_by``, ``recorded_at``): ``timestamp[us,
  UTC]``; period ends as ``date32``;
- ``filings``: ``list<string>``, the source ids behind the value (every candidate's when
  conflicted); ``version_id``: the answering version (null unless active);
- a panel's ``frame``, ``first_value`` (and ``first_value_text``, as ``value_text``: a
  text first value is no number, and a null beside ``restated`` would hide what was
  restated), ``first_version_id`` and ``restated``; a line
  item's panel (graphmem/research/lineitems.py) adds, as its CSV does, ``concept`` (the
  member chosen, null when none is) and ``skipped`` (``list<string>``, the members
  skipped before it with why).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation, localcontext
from importlib import import_module
from typing import Any

from .. import collector
from ..errors import InputError
from ..models import Answer, FactVersion, Screen, filed

PRECISION, SCALE = 38, 10
_QUANTUM = Decimal(1).scaleb(-SCALE)
_EXTRA = "the optional extra `dataframes` (pip install 'graphmem[dataframes]')"


def _need(module: str) -> Any:
    try:
        return import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is needed for this: install {_EXTRA}") from exc


def _schema(pa: Any, decimals: str, extra: list[tuple[str, Any]]) -> Any:
    ts = pa.timestamp("us", tz="UTC")
    number = pa.decimal128(PRECISION, SCALE) if decimals == "decimal" else pa.float64()
    return pa.schema([
        ("entity", pa.string()), ("attribute", pa.string()), *((n, t or number) for n, t in extra),
        ("status", pa.string()),
        ("value", number), ("value_text", pa.string()), ("unit", pa.string()), ("definition", pa.string()),
        ("period_start", pa.date32()), ("period_end", pa.date32()), ("available_by", ts), ("recorded_at", ts),
        ("filings", pa.list_(pa.string())), ("version_id", pa.string()), ("cutoff", ts), ("known_at", ts)])


def _number(value: Any, decimals: str, where: str) -> Any:
    """One value as its column holds it; refuses, naming ``where``, a value that a
    ``decimal128`` column would not hold exactly."""
    if not isinstance(value, Decimal):
        return None
    if decimals == "float":
        return float(value)
    try:  # in a 38-digit context: the default 28 would refuse 1e18 with its 10 decimals
        with localcontext(prec=PRECISION):
            exact = value.quantize(_QUANTUM)
    except InvalidOperation:
        exact = None
    if exact is None or exact != value or len(exact.as_tuple().digits) > PRECISION:
        raise InputError(where, f"{value} does not fit decimal128({PRECISION}, {SCALE}) exactly: "
                                "pass decimals='float' for a float64 column")
    return exact


def _exact_in_arrow(value: Decimal) -> bool:
    """Whether Arrow converts ``value`` to ``decimal128(38, 10)`` exactly: at most 10
    digits after the point and at most 28 before it. Outside that, Arrow is not to be
    trusted: a value of 39 digits or more can wrap around 128 bits, unreported."""
    return value.is_finite() and value.as_tuple().exponent >= -SCALE and value.adjusted() < PRECISION - SCALE


def _numbers(pa: Any, values: list[Any], decimals: str, where: str,
             row: Callable[[int], int] | None = None) -> Any:
    """A number column. A decimal column whose values all pass ``_exact_in_arrow`` (the
    usual one) goes to Arrow as it is, in a fraction of the time a check per value
    takes; any other is quantized value by value, which refuses, naming its row (value
    ``n`` is row ``row(n)``, or row ``n``), a value the column would not hold exactly."""
    if decimals == "float":
        return pa.array([_number(v, decimals, where) for v in values], pa.float64())
    numbers = [v if isinstance(v, Decimal) else None for v in values]
    # each value object once: a panel's first_value repeats at every cutoff of a stretch
    if not all(_exact_in_arrow(v) for v in {id(v): v for v in numbers if v is not None}.values()):
        numbers = [_number(v, decimals, where.format(row(n) if row else n)) for n, v in enumerate(numbers)]
    return pa.array(numbers, pa.decimal128(PRECISION, SCALE))


def _times(pa: Any, values: Iterable[dt.datetime | None], kind: Any) -> Any:
    """A timestamp column, each distinct time converted once: Arrow converts a Python
    datetime in about a quarter of a microsecond, and a panel's 80,000 rows hold 40
    cutoffs and one known_at."""
    distinct: dict[dt.datetime | None, int] = {}
    # keyed in UTC: two times of one other zone compare equal across a fold (01:30 twice)
    index = [distinct.setdefault(t if t is None or t.tzinfo is dt.UTC else t.astimezone(dt.UTC), len(distinct))
             for t in values]
    return pa.array(list(distinct), kind).take(pa.array(index, pa.int32()))


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, Decimal):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.isoformat() if isinstance(value, dt.date) else str(value)


# a row's columns that come from its version (or its candidates): see ``_Parts``
_PART = ("value", "value_text", "unit", "definition", "period_start", "period_end", "available_by",
         "recorded_at", "filings", "version_id")


def _version_part(v: FactVersion | None, shown: tuple[FactVersion, ...]) -> tuple[Any, ...]:
    """The ``_PART`` columns of the answering version, or of every candidate."""
    if not shown:  # not_found: no value, and no filings (an empty list, not a null)
        return (None,) * 8 + ([], None)
    first = shown[0]
    available_by, filings = filed(shown)
    recorded_at = first.recorded_at if len(shown) == 1 else max(x.recorded_at for x in shown)
    value = v.value if v else None
    return (value, _text(value), first.unit, first.definition, first.period.start, first.period.end,
            available_by, recorded_at, filings, v.version_id if v else None)


class _Parts:
    """The ``_PART`` columns of a result, each distinct part once, and each row's index
    into them. A panel holds one answer's version at every cutoff of its stretch (80,000
    cells, about 27,000 versions), so its part columns are built and converted once per
    version and Arrow's ``take`` repeats them (to_pandas of a 2,000-company panel: 374
    against 437 ms)."""

    def __init__(self) -> None:
        self.parts: list[tuple[Any, ...]] = []
        self.index: list[int] = []
        self._at: dict[Any, int] = {}
        self._first: list[int] = []  # each part's first row, to name a row in an error

    def add(self, v: FactVersion | None, shown: tuple[FactVersion, ...]) -> None:
        """Row ``len(self.index)``: the part of ``v`` (or of ``shown``, its candidates),
        known by its objects' ids - the result holds them alive throughout."""
        key = id(v) if v is not None else tuple(map(id, shown))
        if (at := self._at.get(key)) is None:
            at = self._at[key] = len(self.parts)
            self.parts.append(_version_part(v, shown))
            self._first.append(len(self.index))
        self.index.append(at)

    def answer(self, a: Answer) -> None:
        v = a.version
        self.add(v, (v,) if v is not None else a.candidates)

    def row(self, at: int) -> int:
        """The first row of part ``at``."""
        return self._first[at]


def _answer_rows(parts: _Parts, answers: Iterable[tuple[Answer, tuple[Any, ...]]]) -> list[tuple[Any, ...]]:
    """Each answer's own columns, with the columns its kind adds after ``attribute``;
    its part goes to ``parts``."""
    rows = []
    for a, extra in answers:
        parts.answer(a)
        rows.append((a.entity, a.attribute, *extra, a.status, a.cutoff, a.known_at))
    return rows


def _rows(result: Any, pa: Any) -> tuple[list[tuple[Any, ...]], _Parts, str, list[tuple[str, Any]]]:
    """The rows of a result: each row's own columns in the schema's order without
    ``_PART`` (numbers as they are), its parts, what its rows are called in an error,
    and the columns its kind adds after ``attribute`` (``None`` for a number column's
    type)."""
    from .panel import Panel

    parts = _Parts()
    if isinstance(result, Panel):
        extra = [("frame", pa.string()), ("first_value", None), ("first_value_text", pa.string()),
                 ("first_version_id", pa.string()), ("restated", pa.bool_())]
        item = [("concept", pa.string()), ("skipped", pa.list_(pa.string()))] if result.item else []
        return (_answer_rows(parts, ((c.answer, (c.frame, c.first_value, _text(c.first_value),
                                                 c.first_version_id, c.restated,
                                                 *((c.concept, list(c.skipped)) if item else ())))
                                     for c in result.cells)), parts, "cells", extra + item)
    if isinstance(result, Screen):
        return (_answer_rows(parts, ((a, (result.frame,)) for a in result.answers)), parts, "answers",
                [("frame", pa.string())])
    items = list(result)
    if all(isinstance(x, Answer) for x in items):
        return _answer_rows(parts, ((a, ()) for a in items)), parts, "answers", []
    if all(isinstance(x, FactVersion) for x in items):
        for v in items:
            parts.add(v, (v,))
        return ([(v.entity, v.attribute, "erased" if v.erased else "recorded", None, None) for v in items],
                parts, "versions", [])
    raise InputError("result", "a Screen, a Panel, a list of Answers (facts_as_of) or of FactVersions "
                               "(history) is required")


def _columns(names: Sequence[str], rows: list[tuple[Any, ...]]) -> Iterable[tuple[str, list[Any]]]:
    """Each name with its column of ``rows`` (rows hold the names' columns in order)."""
    columns = zip(*rows, strict=True) if rows else ((),) * len(names)
    return ((name, list(values)) for name, values in zip(names, columns, strict=True))


def _column(pa: Any, field: Any, values: list[Any], decimals: str, where: str,
            row: Callable[[int], int] | None = None) -> Any:
    """One column as its field types it (``row``: see ``_numbers``)."""
    if field.name in ("value", "first_value"):
        suffix = "" if field.name == "value" else f".{field.name}"
        return _numbers(pa, values, decimals, f"{where}[{{}}]{suffix}", row)
    if pa.types.is_timestamp(field.type):
        return _times(pa, values, field.type)
    return pa.array(values, field.type)


def to_arrow(result: Any, *, decimals: str = "decimal") -> Any:
    """``result`` as a ``pyarrow.Table`` (see the module docstring for the columns)."""
    if decimals not in ("decimal", "float"):
        raise InputError("decimals", f"must be 'decimal' or 'float'; got {decimals!r}")
    pa = _need("pyarrow")
    with collector.paused():  # see graphmem/collector.py
        rows, parts, kind, extra = _rows(result, pa)
        schema = _schema(pa, decimals, extra)
        own = [n for n in schema.names if n not in _PART]
        arrays = {n: _column(pa, schema.field(n), values, decimals, kind) for n, values in _columns(own, rows)}
        shared = len(parts.parts) < len(parts.index)  # else each row has its own part, in order
        take = pa.array(parts.index, pa.int32()) if shared else None
        for n, values in _columns(_PART, parts.parts):
            column = _column(pa, schema.field(n), values, decimals, kind, parts.row if shared else None)
            arrays[n] = column.take(take) if shared else column
        # freed inside the pause: the collector's first pass after it walks every object
        # made during it that is still alive (80,000 rows: a sixth of a panel's to_arrow)
        del rows, parts
        return pa.Table.from_arrays([arrays[n] for n in schema.names], schema=schema)


def to_pandas(result: Any, *, decimals: str = "decimal") -> Any:
    """``result`` as a pandas DataFrame (decimals as ``Decimal`` objects, exact; times
    as ``datetime64[us, UTC]``)."""
    _need("pandas")
    return to_arrow(result, decimals=decimals).to_pandas(coerce_temporal_nanoseconds=False)


def to_polars(result: Any, *, decimals: str = "decimal") -> Any:
    """``result`` as a polars DataFrame (``Decimal(38, 10)``, ``Datetime(us, UTC)``)."""
    pl = _need("polars")
    return pl.from_arrow(to_arrow(result, decimals=decimals))


def write_parquet(result: Any, path: Any, *, decimals: str = "decimal") -> None:
    """``result`` as a Parquet file (the command line's ``--format parquet``)."""
    pq = _need("pyarrow.parquet")
    pq.write_table(to_arrow(result, decimals=decimals), path)
