"""``graphmem mcp``: graphmem as an MCP server on the official Python SDK (``mcp`` 2.x).

Install with ``pip install graphmem[mcp]``. ``server`` builds and runs it, ``tools``
defines the tools and their annotations, ``results`` what they return, ``access`` who
is calling (the scope is the server's: fixed for stdio, per bearer token for HTTP).
"""

from .access import Caller, FixedAccess, TokenAccess
from .server import build_server, serve
from .tools import Grants

__all__ = ["Caller", "FixedAccess", "Grants", "TokenAccess", "build_server", "serve"]
