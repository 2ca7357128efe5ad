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
  conflicted); ``version_id``: the answering version (null unless active).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal, InvalidOperation, localcontext
from importlib import import_module
from typing import Any

from ..errors import InputError
from ..models import Answer, FactVersion, Screen

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
        ("entity", pa.string()), ("attribute", pa.string()), *extra, ("status", pa.string()),
        ("value", number), ("value_text", pa.string()), ("unit", pa.string()), ("definition", pa.string()),
        ("period_start", pa.date32()), ("period_end", pa.date32()), ("available_by", ts), ("recorded_at", ts),
        ("filings", pa.list_(pa.string())), ("version_id", pa.string()), ("cutoff", ts), ("known_at", ts)])


def _number(value: Any, decimals: str, where: str) -> Any:
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


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, Decimal):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return value.isoformat() if isinstance(value, dt.date) else str(value)


def _version_row(v: FactVersion | None, shown: list[FactVersion], decimals: str, where: str) -> dict[str, Any]:
    first = shown[0] if shown else None
    return {"value": _number(v.value if v else None, decimals, where), "value_text": _text(v.value if v else None),
            "unit": first.unit if first else None, "definition": first.definition if first else None,
            "period_start": first.period.start if first else None, "period_end": first.period.end if first else None,
            "available_by": max((x.available_by for x in shown), default=None),
            "recorded_at": max((x.recorded_at for x in shown), default=None),
            "filings": list(dict.fromkeys(e.source_id for x in shown for e in x.sources)),
            "version_id": v.version_id if v else None}


def _answer_row(a: Answer, decimals: str, where: str) -> dict[str, Any]:
    shown = [a.version] if a.version else list(a.candidates)
    return {"entity": a.entity, "attribute": a.attribute, "status": a.status,
            **_version_row(a.version, shown, decimals, where), "cutoff": a.cutoff, "known_at": a.known_at}


def _rows(result: Any, decimals: str, pa: Any) -> tuple[list[dict[str, Any]], list[tuple[str, Any]]]:
    """The rows of a result and the columns its kind adds."""
    from .panel import Panel

    if isinstance(result, Panel):
        number = pa.decimal128(PRECISION, SCALE) if decimals == "decimal" else pa.float64()
        extra = [("frame", pa.string()), ("first_value", number), ("first_version_id", pa.string()),
                 ("restated", pa.bool_())]
        return [{**_answer_row(c.answer, decimals, f"cells[{n}]"), "frame": c.frame,
                 "first_value": _number(c.first_value, decimals, f"cells[{n}].first_value"),
                 "first_version_id": c.first_version_id, "restated": c.restated}
                for n, c in enumerate(result.cells)], extra
    if isinstance(result, Screen):
        return [{**_answer_row(a, decimals, f"answers[{n}]"), "frame": result.frame}
                for n, a in enumerate(result.answers)], [("frame", pa.string())]
    items = list(result)
    if all(isinstance(x, Answer) for x in items):
        return [_answer_row(a, decimals, f"answers[{n}]") for n, a in enumerate(items)], []
    if all(isinstance(x, FactVersion) for x in items):
        return [{"entity": v.entity, "attribute": v.attribute, "status": "erased" if v.erased else "recorded",
                 **_version_row(v, [v], decimals, f"versions[{n}]"), "cutoff": None, "known_at": None}
                for n, v in enumerate(items)], []
    raise InputError("result", "a Screen, a Panel, a list of Answers (facts_as_of) or of FactVersions "
                               "(history) is required")


def to_arrow(result: Any, *, decimals: str = "decimal") -> Any:
    """``result`` as a ``pyarrow.Table`` (see the module docstring for the columns)."""
    if decimals not in ("decimal", "float"):
        raise InputError("decimals", f"must be 'decimal' or 'float'; got {decimals!r}")
    pa = _need("pyarrow")
    rows, extra = _rows(result, decimals, pa)
    schema = _schema(pa, decimals, extra)
    return pa.Table.from_pylist(rows, schema=schema)


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
