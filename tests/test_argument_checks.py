"""A Memory call's own arguments are checked before any query (DESIGN.md §11).

Each call is made by a Memory whose server does not exist (nothing listens on port 9):
any query would end in UnavailableError, so an InputError naming the argument proves
the refusal came first; a TypeError would be a crash, not a refusal. The retry policy's
time budget is checked against the same dead server.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterator
from typing import Any

import pytest

from graphmem import FactIn, InputError, Memory, Period, RetryPolicy, Scope
from graphmem.errors import UnavailableError

S = Scope(tenant="t")
Q1 = Period(start=dt.date(2024, 1, 1), end=dt.date(2024, 3, 31))
DEAD = "bolt://127.0.0.1:9"


@pytest.fixture
def dead() -> Iterator[Memory]:
    with Memory.connect(DEAD, retry=RetryPolicy(attempts=1, seconds=1)) as m:
        yield m


def fact() -> FactIn:
    return FactIn(entity="acme", attribute="revenue", value=1, period=Q1, sources=("s",))


def derive(m: Memory, **kw: Any) -> Any:
    return m.derive(S, **{"method": "m", "method_version": "1", "params": {}, "inputs": {"x": "fv_x"},
                          "output": fact(), **kw})


CALLS = {  # a call with one argument of the wrong type -> the argument it names
    "record items None": (lambda m: m.record(S, items=None), "items"),
    "record items int": (lambda m: m.record(S, items=5), "items"),
    "record sources None": (lambda m: m.record(S, sources=None), "sources"),
    "assert_facts None": (lambda m: m.assert_facts(S, None), "items"),
    "assert_facts int": (lambda m: m.assert_facts(S, 5), "items"),
    "derive input None": (lambda m: derive(m, inputs={"x": None}), "inputs['x']"),
    "derive input int": (lambda m: derive(m, inputs={"x": 5}), "inputs['x']"),
    "derive input dict": (lambda m: derive(m, inputs={"x": {"fv_x": 1}}), "inputs['x']"),
    "derive params None": (lambda m: derive(m, params=None), "params"),
    "derive params str": (lambda m: derive(m, params="x"), "params"),
    "derive params list": (lambda m: derive(m, params=[1, 2]), "params"),
    "impact neither": (lambda m: m.impact(S), "impact"),
    "impact both": (lambda m: m.impact(S, source_id="s", version_id="fv_x"), "impact"),
    "lineage direction": (lambda m: m.lineage(S, "fv_x", direction="sideways"), "direction"),
    "lineage direction int": (lambda m: m.lineage(S, "fv_x", direction=5), "direction"),
    "derive params NaN": (lambda m: derive(m, params={"p": float("nan")}), "params"),  # no JSON holds it
    "search types int": (lambda m: m.search(S, text="x", types=5), "types"),
}


@pytest.mark.parametrize("case", list(CALLS))
def test_a_call_argument_of_the_wrong_type_is_refused_before_any_query(dead, case):
    call, where = CALLS[case]
    with pytest.raises(InputError) as info:
        call(dead)
    assert info.value.where == where


def test_an_iterable_argument_is_still_taken_lazily(dead):
    """The iterable check does not consume a generator: its bad item is named by place."""
    with pytest.raises(InputError) as info:
        dead.assert_facts(S, (x for x in [fact(), "row"]))
    assert info.value.where == "facts[1]"


def test_no_retry_starts_after_the_policy_time():
    """A transient fault is retried within ``RetryPolicy.seconds``: the backoff before
    the last try is cut to what is left, never slept past it (seeded: a 3 s backoff
    draw would otherwise start a try seconds after a 0.5 s budget)."""
    random.seed(0)
    policy = RetryPolicy(attempts=1000, seconds=0.5, first_wait=3, max_wait=3)
    with Memory.connect(DEAD, retry=policy) as m:
        began = time.monotonic()
        with pytest.raises(UnavailableError):
            m.counts(S)
        assert time.monotonic() - began < 1.0


@pytest.mark.parametrize(("options", "where"), [
    ({"required_scope": "project"}, "required_scope"),
    ({"required_scope": ("project", 5)}, "required_scope[1]"),
    ({"retry": "x"}, "retry"),
    ({"timeouts": 5}, "timeouts"),
])
def test_a_memory_option_of_the_wrong_type_is_refused_when_it_is_made(options, where):
    """A string ``required_scope`` was required letter by letter (every call refused for
    keys p, r, o, ...); a retry policy or timeouts of another type was an AttributeError
    at the first call."""
    with pytest.raises(InputError) as info:
        Memory.connect(DEAD, **options)
    assert info.value.where == where
