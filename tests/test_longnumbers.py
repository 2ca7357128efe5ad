"""Long JSON numbers are rewritten short before the parser sees them (loaders/longnumbers.py),
held against a model: Python's Decimal read of the original token.

- any JSON without a long number passes byte for byte, strings included (a digit run in
  a string is text, whatever its length);
- a long number read through the rewrite keeps its exact value when graphmem's bounds
  take it, and is out of bounds when they do not, wherever the read chunks cut it;
- a token that is not a JSON number stays one the parser refuses (never a crash);
- a 100 MB digit run is read in flat memory.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

import ijson
import pytest
from graphmem.loaders.longnumbers import ShortNumbers, describe
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphmem import limits, values

LPA = Path(__file__).parent / "fixtures" / "companyfacts-CIK0001997711-lpa.json"
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LONG = re.compile(r"[0-9]{601}|[eE][+-]?[0-9]{10}")  # what makes a number long


def rewritten(data: bytes, chunk: int) -> bytes:
    with ShortNumbers(io.BytesIO(data), chunk=chunk) as stream:
        return stream.read()


def parsed(data: bytes) -> list[tuple[str, object]]:
    return list(ijson.basic_parse(io.BytesIO(data), use_float=False))


def digit_runs(min_size: int = 0, max_size: int = 1_500) -> st.SearchStrategy[str]:
    """Digit runs up to ``max_size`` long, mostly one digit repeated around a few random
    ones (as long runs are in practice: zeros, nines), so hypothesis builds them fast."""
    return st.builds(lambda head, fill, count, tail: (head + fill * count + tail),
                     st.text("0123456789", max_size=3), st.sampled_from("0123456789"),
                     st.integers(0, max_size), st.text("0123456789", max_size=3)
                     ).filter(lambda run: min_size <= len(run))


@st.composite
def number_tokens(draw: st.DrawFn) -> str:
    """JSON number tokens, short and long, and now and then one that is not JSON."""
    sign = draw(st.sampled_from(["", "-"]))
    integer = draw(st.one_of(st.just("0"), st.builds(lambda a, b: a + b, st.sampled_from("123456789"),
                                                     digit_runs())))
    fraction = draw(st.one_of(st.just(""), digit_runs(1).map(lambda run: "." + run)))
    exponent = draw(st.one_of(st.just(""), st.builds(lambda e, s, run: e + s + run, st.sampled_from("eE"),
                                                     st.sampled_from(["", "+", "-"]),
                                                     st.one_of(digit_runs(1, 30), digit_runs(1)))))
    token = sign + integer + fraction + exponent
    if draw(st.integers(0, 9)) == 0:  # break it: a leading zero, a second dot, a missing digit
        token = draw(st.sampled_from(["0" + token.lstrip("-"), token + ".5", token + "e", "-" + token]))
    return token


def model(token: str) -> tuple[bool, Decimal | None]:
    """(is it a JSON number, its value when graphmem's bounds take it, else None)."""
    if not _JSON_NUMBER.fullmatch(token):
        return False, None
    try:
        value = Decimal(token)
    except InvalidOperation:  # an exponent Decimal cannot hold: zero is zero, else far out of bounds
        digits = re.split("[eE]", token)[0]
        return True, Decimal(0) if not digits.strip("-0.") else None
    return True, value if limits.decimal_problem(value) is None else None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tokens=st.lists(number_tokens(), min_size=1, max_size=4),
       text=digit_runs(0, 2_000) | st.text('0123456789eE+-."\\', max_size=40),
       chunk=st.integers(1, 700))
@example(tokens=["9" * 5000], text="", chunk=64)
@example(tokens=["1." + "0" * 5000, "1" + "0" * 5000 + "e-5000"], text="", chunk=3)
@example(tokens=["1e" + "9" * 25, "0e" + "9" * 25, "-0.0e-" + "9" * 25], text="1e12345678901", chunk=5)
@example(tokens=["0." + "0" * 700 + "123e700"], text="", chunk=600)
def test_a_long_number_keeps_its_value_or_stays_out_of_bounds(tokens, text, chunk):
    document = json.dumps({"text\\\"": text, "rows": [{"val": "{}"} for _ in tokens]})
    for token in tokens:  # the tokens stand where the placeholders were, as numbers
        document = document.replace('"{}"', token, 1)
    data = document.encode()
    expected = [model(token) for token in tokens]
    out = rewritten(data, chunk)
    if not any(_LONG.search(token) for token in tokens):
        assert out == data  # nothing long: nothing changed
    if not all(valid for valid, _ in expected):
        with pytest.raises(ijson.JSONError):
            parsed(out)
        return
    events = parsed(out)
    assert [v for e, v in events if e == "string"] == [text]
    numbers = [v for e, v in events if e == "number"]
    for token, (_, value), number in zip(tokens, expected, numbers, strict=True):
        if value is not None:
            assert Decimal(number) == value, token
        else:
            with pytest.raises(ValueError):
                values.typed(number)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.text(max_size=20) | digit_runs(0, 1_200)
    | st.decimals(allow_nan=False, allow_infinity=False).map(lambda d: float(d) if abs(d) < 10**300 else 0.5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(value=json_values, chunk=st.integers(1, 300), ascii_only=st.booleans())
def test_json_without_a_long_number_passes_byte_for_byte(value, chunk, ascii_only):
    data = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert rewritten(data, chunk) == data


def test_the_real_files_pass_byte_for_byte():
    for path in (LPA.parent).glob("*.json"):
        data = path.read_bytes()
        assert rewritten(data, 65536) == data, path


@pytest.mark.parametrize(("token", "detail"), [
    ("9" * 5000, "more than 600 significant digits"),
    ("-1" + "2" * 700 + "e-3", "more than 600 significant digits"),
    ("1e" + "9" * 40, "an exponent of 17 digits or more"),
    ("1e-" + "9" * 40, "an exponent of 17 digits or more"),
    ("1e" + "1" * 17, "an exponent of 17 digits or more"),
])
def test_a_stand_in_says_what_the_number_was(token, detail):
    [(_, number)] = [(e, v) for e, v in parsed(rewritten(f"[{token}]".encode(), 64)) if e == "number"]
    with pytest.raises(ValueError):
        values.typed(number)
    assert detail in describe(Decimal(number))
    assert describe(Decimal("1e309")) is None and describe(Decimal("1" * 70)) is None


_PEAK = """
import json, sys
from graphmem.loaders import sec
from graphmem.loaders.spool import Spool
with Spool() as spool:
    read = sec.read(sys.argv[1], spool=spool)
# VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's peak (Linux keeps it
# across fork and exec), so under pytest it would be pytest's own.
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
print(json.dumps([read.rows, [q.reason for q in read.quarantined], peak]))
"""


def _read_in_a_process(path: Path) -> tuple[int, list[str], float]:
    """Rows, quarantine reasons and peak RSS (MB) of reading ``path`` in a new process."""
    run = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, check=True,
                         timeout=300)
    rows, reasons, peak = json.loads(run.stdout)
    return rows, reasons, peak


def test_a_100_mb_digit_run_is_read_in_flat_memory(tmp_path):
    """The companyfacts reader streams past the run: its peak memory is the one of the
    same file without it, and the row is quarantined."""
    before, after = json.dumps(json.loads(LPA.read_text())).split('"val": 2650535,', 1)
    path = tmp_path / "companyfacts.json"
    with path.open("w") as out:
        out.write(before + '"val": -')
        for _ in range(100):
            out.write("9" * 1_000_000)
        out.write("," + after)
    assert path.stat().st_size > 100_000_000
    rows, reasons, peak = _read_in_a_process(path)
    plain_rows, plain_reasons, plain_peak = _read_in_a_process(LPA)
    assert (rows, reasons) == (768, ["out-of-bounds"]) and (plain_rows, plain_reasons) == (768, [])
    assert peak < plain_peak + 20, (peak, plain_peak)  # MB: the run is 100
