"""The cyclic collector's pause around large builds (graphmem/collector.py):
whatever happens inside, the process's collector is left as it was found."""

from __future__ import annotations

import gc
import threading

import pytest

from graphmem import collector


@pytest.fixture
def restore_gc():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_the_collector_is_off_inside_and_back_on_after_even_on_an_error(restore_gc):
    gc.enable()
    with pytest.raises(RuntimeError), collector.paused():
        assert not gc.isenabled()
        raise RuntimeError("a build that fails")
    assert gc.isenabled()


def test_a_collector_the_caller_had_switched_off_stays_off(restore_gc):
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()


def test_a_build_ending_never_turns_the_collector_on_under_another_running_build(restore_gc):
    gc.enable()
    inside, release = threading.Event(), threading.Event()

    def other() -> None:
        with collector.paused():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=other)
    worker.start()
    assert inside.wait(10)
    with collector.paused():
        pass
    assert not gc.isenabled()  # the other build is still running
    release.set()
    worker.join(10)
    assert gc.isenabled()


def test_what_a_build_made_is_in_the_oldest_generation_after_it(restore_gc):
    gc.enable()
    gc.collect()
    with collector.paused():
        built = [[n] for n in range(2 * collector.LARGE)]  # lists: tracked by the collector
    oldest = {id(x) for x in gc.get_objects(generation=2)}
    assert gc.isenabled() and all(id(row) in oldest for row in built)  # none left young


def test_what_a_small_build_made_stays_young(restore_gc):
    gc.enable()
    gc.collect()
    with collector.paused():
        built = [[n] for n in range(100)]
    assert not {id(x) for x in built} & {id(x) for x in gc.get_objects(generation=2)}


def test_objects_the_process_froze_stay_frozen(restore_gc):
    gc.enable()
    kept = [[n] for n in range(10)]
    gc.freeze()
    try:
        with collector.paused():
            built = [[n] for n in range(2 * collector.LARGE)]  # large enough to be promoted
        oldest = {id(x) for x in gc.get_objects(generation=2)}
        assert not {id(x) for x in kept} & oldest  # still in the permanent generation
        assert not {id(x) for x in built} & oldest  # and nothing was promoted
    finally:
        gc.unfreeze()
