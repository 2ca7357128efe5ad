"""Property test: a panel is, cell by cell, the model's screen (tests/model.py).

The writes are test_screen_property's (three companies, keys around CY2024Q3, two
publishers, invalidations and retractions, against Neo4j and the model). Then one panel
over random cutoffs at one random known_at - of the frames CY2024Q2, CY2024Q3 and
CY2024Q3I, and each entity's latest quarter and instant - is checked cell by cell: the
universe at each cutoff, the chosen key's status, values and period, and for the latest
kinds the frame: the latest one in which the model finds a candidate; and each cell's
first-reported value and ``restated``: the key's first evidence time, as known at
known_at, whose model read is active by the cutoff.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from test_screen_property import ATTRIBUTE, BASE, ENTITIES, PERIODS, Run, clocked, operation, sources  # noqa: F401

from graphmem.screen import Selection, frame_of

FRAMES = ("CY2024Q2", "CY2024Q3", "CY2024Q3I")
KINDS = {"quarter": lambda f: "Q" in f and not f.endswith("I"), "instant": lambda f: f.endswith("I")}


def latest(run: Run, kind: str, company: int, cutoff: dt.datetime, known_at: dt.datetime):
    """(frame, row) of the entity's latest frame of ``kind`` with a candidate."""
    frames = sorted({f for p in PERIODS if (f := frame_of(p)) and KINDS[kind](f)},
                    key=lambda f: Selection.frame(f).end, reverse=True)
    for frame in frames:
        row = run.expected(frame, company, cutoff, known_at)
        if row[0] != "not_found":
            return frame, row
    return None, ("not_found", set(), None)


def first_reported(run: Run, cell, known_at: dt.datetime) -> tuple:
    """(first_value, restated) by the model: the key's read at its first evidence time,
    as known at known_at, that is active by the cell's cutoff."""
    if cell.period is None:
        return None, None
    model, key = run.model, (ENTITIES.index(cell.entity), [p.text for p in PERIODS].index(cell.period.text))
    points = {e.available_by for v in model.versions if v.key == key and v.recorded_at <= known_at
              and not v.erased for e in v.edges if e.recorded_at <= known_at}
    points |= {z.available_by for z in model.resolutions if z.recorded_at <= known_at
               and any(model.versions[i].key == key for i in z.settles)}
    reads = (model.read(key, at, known_at) for at in sorted(points) if at <= cell.cutoff)
    first = next((Decimal(values.pop()) for status, values in reads if status == "active"), None)
    return first, None if first is None or cell.status != "active" else cell.value != first


def got(cell) -> tuple:
    shown = [cell.answer.version] if cell.answer.version else list(cell.answer.candidates)
    return cell.status, {v.value for v in shown}, shown[0].period.text if shown else None


def want(row) -> tuple:
    return row[0], {Decimal(v) for v in row[1]}, row[2]


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=st.tuples(*(st.tuples(st.just("source"), st.just(c), st.just("own"), st.just("primary"),
                                    st.integers(0, 40)) for c in range(3)), sources),
       ops=st.lists(operation, min_size=8, max_size=16),
       days=st.lists(st.integers(-5, 60), min_size=2, max_size=6),
       back=st.sampled_from([0, 0, 1, 3, 8]))
def test_a_panel_is_the_models_screen_at_every_cutoff(clocked, setup, ops, days, back):  # noqa: F811
    mem, clock = clocked
    run = Run(mem, clock)
    try:
        for op in [*setup, *ops]:
            run.apply(op)
        known_at = run.marks[max(0, len(run.marks) - 1 - back)]
        cutoffs = sorted({BASE + dt.timedelta(days=d, hours=12) for d in days})
        panel = mem.panel(run.scope, attribute=ATTRIBUTE, frames=FRAMES, cutoffs=cutoffs, known_at=known_at,
                          first_reported=True)
        for cutoff in cutoffs:
            universe = sorted(e for c, e in enumerate(ENTITIES) if run.reported(c, cutoff, known_at))
            for frame in FRAMES:
                cells = [c for c in panel.cells if c.cutoff == cutoff and c.frame == frame]
                assert [c.entity for c in cells] == universe, (frame, cutoff)
                for cell in cells:
                    row = run.expected(frame, ENTITIES.index(cell.entity), cutoff, known_at)
                    event(f"{frame} cell: {row[0]}")
                    assert got(cell) == want(row), (cell.entity, frame, cutoff)
                    assert (cell.first_value, cell.restated) == first_reported(run, cell, known_at), \
                        (cell.entity, frame, cutoff)
        for kind in KINDS:
            panel = mem.panel(run.scope, attribute=ATTRIBUTE, latest=kind, cutoffs=cutoffs, known_at=known_at,
                              entities=ENTITIES)
            assert len(panel.cells) == len(cutoffs) * len(ENTITIES)
            for cell in panel.cells:
                frame, row = latest(run, kind, ENTITIES.index(cell.entity), cell.cutoff, known_at)
                assert (cell.frame, got(cell)) == (frame, want(row)), (kind, cell.entity, cell.cutoff)
    finally:
        note("\n".join(run.log))
