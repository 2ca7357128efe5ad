"""Python's cyclic garbage collector paused while a large result is built.

A panel of 80,000 cells is some 900,000 Python objects, built a few at a time. Every
full pass of the cyclic collector walks all of them, and the passes come more often
the larger the heap grows: measured on the 2,000-company panel, eleven full passes
took 5.6 s of a 30 s panel, and converting that panel to pandas took twice as long
with the collector on. A 2,000-company screen (some 40,000 objects) ran a full pass
every other call, 60-70 ms of a 240 ms screen; a lineage report, a third of impact's
time on its 100k bench. The objects built are plain containers that reference
counting frees; none forms a cycle that needs the collector. So the build runs with
the collector off, and it is switched back on (if it was on) when the last build
running in the process ends - a thread's build never turns it on under another's.
The pause is process-wide and lasts the whole build, database round trips included
(25 s for that panel): in a server (the web view, MCP) other requests run without it
meanwhile, and a ``gc.disable()`` made by other code during a build is undone at its end.

**What was built goes straight to the oldest generation.** Objects made during the pause
are the youngest when it ends, so the collector's next passes would walk all of them
twice over (the young generation's, then the middle one's: 0.4 s and 0.6 s after a
2,000-company panel) to find no cycle, on their way to the oldest generation. The
pause's end moves every object the collector tracks - the process's, not only the
build's - there at once (``gc.freeze()`` then ``gc.unfreeze()``: two list splices; a
panel measured 5.4 s against 5.9 s without). The cost: a garbage cycle young at that
moment (another thread's, or one made during the pause) is freed by the next full pass
rather than a young one, and CPython counts these moves toward no full pass. So it is
done only after a large build (``LARGE`` objects or more still young: a panel, not a
server's every small request), and skipped when the process has frozen objects of its
own (a server that freezes before forking keeps them frozen; one freezing at the very
moment of a build's end could see its freeze undone).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

LARGE = 100_000
"""Young objects at a pause's end from which they go straight to the oldest generation."""

_lock = threading.Lock()
_builds = 0
_was_enabled = False


@contextmanager
def paused() -> Iterator[None]:
    """The collector off for the ``with`` block (nested and concurrent blocks share one
    pause); its state before the first block is restored after the last one."""
    global _builds, _was_enabled
    with _lock:
        if _builds == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _builds += 1
    try:
        yield
    finally:
        with _lock:
            _builds -= 1
            if _builds == 0 and _was_enabled:
                if gc.get_count()[0] >= LARGE and gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
