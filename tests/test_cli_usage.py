"""Usage errors a user makes first, each ONE line on stderr naming the option (exit 2) or
the setting (exit 1), never an "unexpected ... (a bug?)" line; and output piped into a
reader that stops early (`| head`) ends quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from procs import env, run_cli  # noqa: E402 - test helpers beside this file
from test_cli import ASOF, one_line_error


def test_a_bad_scope_option_is_a_usage_error_naming_it(migrated):
    environ = env(migrated)
    for args, said in (
            (("--tenant", "cli-usage", "--scope", "tenant=x"),
             "--scope: the tenant is given by --tenant, not as a scope key"),
            (("--tenant", "cli-usage", "--scope", "p=1", "--scope", "p=2"),
             "--scope: key 'p' given twice: '1' and '2'"),
            (("--tenant", "cli-usage", "--scope", "entity="), "--scope: expected KEY=VALUE, got 'entity='"),
            (("--tenant", "t" * 600), "--tenant: 600 bytes in UTF-8; at most 512"),
            (("--tenant", "cli-usage", *(f"--scope=k{i}=v" for i in range(17))), "--scope: 17 scope keys; at most 16")):
        err = one_line_error(run_cli(*ASOF, *args, environ=environ), code=2)
        assert err == f"graphmem: error: {said}\n"
    same_twice = run_cli(*ASOF, "--tenant", "cli-usage", "--scope", "p=1", "--scope", "p=1", environ=environ)
    assert same_twice.returncode == 4 and same_twice.stderr == ""  # not found: the scope was fine


def test_a_uri_that_is_not_bolt_names_the_setting(migrated):
    for uri in ("127.0.0.1:7687", "http://127.0.0.1:7474"):
        err = one_line_error(run_cli(*ASOF, environ=env(migrated, GRAPHMEM_NEO4J_URI=uri)))
        assert err.startswith(f"graphmem: error: GRAPHMEM_NEO4J_URI: {uri!r}: expected bolt://HOST:PORT"), err


def test_lineage_out_in_a_missing_folder_is_refused_before_the_query(migrated, tmp_path: Path):
    out = tmp_path / "absent" / "lineage.png"
    err = one_line_error(run_cli("lineage", "fv_000000000000000000000000", "--tenant", "cli-usage", "--format",
                                 "png", "--out", str(out), environ=env(migrated)), code=2)
    assert err == f"graphmem: error: --out: {out}: no such folder: {out.parent}\n"


def test_output_into_a_closed_pipe_ends_quietly(migrated):
    """The reader is gone before the first line is written (`graphmem migrate | head -0`)."""
    exe = Path(sys.executable).with_name("graphmem")
    proc = subprocess.Popen([str(exe), "migrate"], env=env(migrated), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert err == "" and proc.returncode == 1, err


def test_the_web_view_and_the_mcp_server_both_run_with_their_default_ports():
    from graphmem.cli import main

    def port(command: str) -> int:
        return next(p.default for p in main.commands[command].params if p.name == "port")

    assert port("ui") != port("mcp")


def test_python_dash_m_graphmem_is_the_command(migrated):
    """Where the script is not on PATH, ``python -m graphmem`` runs the same command."""
    proc = subprocess.run([sys.executable, "-m", "graphmem", "--help"], env=env(migrated), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Usage: graphmem ") and "bootstrap" in proc.stdout and "eval" in proc.stdout
    wrong = subprocess.run([sys.executable, "-m", "graphmem", "asof", "--nope"], env=env(migrated),
                           capture_output=True, text=True, timeout=60)
    assert wrong.returncode == 2 and "--nope" in wrong.stderr
