"""The commands of retrieval and evaluation: ``graphmem embed`` and ``graphmem eval``
(registered on the main group by graphmem/cli.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from .. import cli
from ..retrieval import as_embedder
from . import counterexamples, locomo, queries, score

_embedder_opt = click.option(
    "--embedder", "spec", envvar="GRAPHMEM_EMBEDDER", default=None,
    help="toy, wordllama, sentence-transformers[:MODEL], fastembed[:MODEL] or module:attr "
         "($GRAPHMEM_EMBEDDER). Without one, only the text rung runs.")


@click.command()
@click.option("--embedder", "spec", envvar="GRAPHMEM_EMBEDDER", required=True,
              help="The embedder spec ($GRAPHMEM_EMBEDDER); see graphmem/retrieval/embedders.py.")
@click.option("--switch", is_flag=True, help="Re-embed a scope made with another embedder and switch it.")
@cli._scoped
@cli._json_opt
def embed(spec: str, switch: bool, tenant: str, scope_keys: tuple[str, ...], as_json: bool) -> None:
    """Embed every memory of a scope that has no vector by the embedder yet (resumable:
    a killed run loses at most one batch; run it again to finish)."""
    scope = cli._scope(tenant, scope_keys)
    embedder = as_embedder(spec)  # a bad spec is one error line, before the progress bar and the database
    with cli._connect() as memory, click.progressbar(length=0, label="embedding", file=sys.stderr) as bar:
        def progress(done: int, total: int) -> None:
            bar.length = total
            bar.update(done - bar.pos)
        report = memory.embed(scope, embedder=embedder, switch=switch, progress=progress)
    cli._dump(report) if as_json else click.echo(
        f"embedded {report['embedded']:,} memories with {report['embedder']} ({report['dims']} dimensions) "
        f"in {report['seconds']:.1f} s" + ("; the scope switched to it" if report["switched"] else ""))


@click.group("eval")
def eval_group() -> None:
    """The evaluation protocol: counter-examples, a query set, LoCoMo."""


def _ladder(report: dict[str, Any], as_json: bool) -> None:
    if as_json:
        cli._dump(report)
    else:
        click.echo(score.table(report["rungs"]))


@eval_group.command("counterexamples")
@_embedder_opt
@cli._json_opt
def eval_counterexamples(spec: str | None, as_json: bool) -> None:
    """The minimum counter-example set by layer, in a throwaway tenant; exit 1 on a failure."""
    with cli._connect() as memory:
        memory.migrate()
        report = counterexamples.run(memory, as_embedder(spec))
    cli._dump(report) if as_json else click.echo(counterexamples.table(report))
    if not report["ok"]:
        sys.exit(1)


@eval_group.command("retrieval")
@click.option("--queries", "path", required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSON Lines: query, scope or namespace, cutoff/known_at, relevant, forbidden.")
@click.option("--limit", default=10, show_default=True)
@_embedder_opt
@cli._json_opt
def eval_retrieval(path: Path, limit: int, spec: str | None, as_json: bool) -> None:
    """A fixed query set on every rung: recall@5/@10, MRR, forbidden hits, latency.
    Exit 1 if any rung returns a forbidden memory."""
    with cli._connect() as memory:
        report = queries.run(memory, path, as_embedder(spec), limit)
    _ladder(report, as_json)
    if not report["ok"]:
        sys.exit(1)


@eval_group.command("locomo")
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@_embedder_opt
@cli._json_opt
def eval_locomo(path: Path, spec: str | None, as_json: bool) -> None:
    """LoCoMo conversations (a file or folder) loaded one per namespace in a throwaway
    tenant, every question of categories 1-4 searched on every rung."""
    with cli._connect() as memory:
        memory.migrate()
        report = locomo.run(memory, path, as_embedder(spec))
    if not as_json:
        click.echo(json.dumps(report["loaded"]) + (f"  embedder {report['embedder']}" if report["embedder"] else ""))
    _ladder(report, as_json)


def register(main: click.Group) -> None:
    main.add_command(embed)
    main.add_command(eval_group)
