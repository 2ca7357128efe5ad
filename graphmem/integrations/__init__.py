"""Optional integrations with agent frameworks, each behind its own extra.

- ``graphmem.integrations.mcp``: the ``graphmem mcp`` server (``pip install graphmem[mcp]``)
- ``graphmem.integrations.langgraph``: ``GraphmemStore``, a LangGraph ``BaseStore``
  (``pip install graphmem[langgraph]``)

The core package never imports them, so its install stays lean.
"""
