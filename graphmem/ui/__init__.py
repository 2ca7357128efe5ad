"""``graphmem ui``: a read-only web view of what was known when (needs graphmem[ui]).

Server-rendered pages on Starlette (:mod:`.app`), each built from the public
:class:`graphmem.Memory` API only (:mod:`.pages`): search, a key's versions drawn on
(cutoff x known_at) with the answer at a picked point (:mod:`.plot`), a source and
the impact of withdrawing it, lineage, a screen stepped through cutoffs, and agent
memory. Templates and a small script ship in the package: no CDN, no build step.
"""

from .app import build_app, serve

__all__ = ["build_app", "serve"]
