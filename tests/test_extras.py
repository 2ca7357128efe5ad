"""The integrations are optional extras: the core package neither requires nor imports them."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import requires

from packaging.requirements import Requirement


def test_the_core_install_does_not_pull_in_the_integrations():
    core = [Requirement(r) for r in requires("graphmem") or [] if "extra ==" not in r]
    assert {r.name for r in core}.isdisjoint({"mcp", "langgraph", "langgraph-checkpoint", "starlette", "uvicorn",
                                              "jinja2"})
    extras = {Requirement(r).name: r for r in requires("graphmem") or [] if "extra ==" in r}
    assert 'extra == "mcp"' in extras["mcp"] and 'extra == "langgraph"' in extras["langgraph"]
    assert all('extra == "ui"' in extras[name] for name in ("starlette", "uvicorn", "jinja2"))


def test_importing_graphmem_imports_no_integration():
    code = ("import sys, graphmem, graphmem.cli; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mcp', 'langgraph', 'starlette', 'uvicorn', 'jinja2')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
