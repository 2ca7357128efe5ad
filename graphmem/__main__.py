"""``python -m graphmem``: the ``graphmem`` command, where its script is not on PATH
(a virtualenv not activated, a notebook's kernel, ``pipx run``)."""

from .cli import main

main(prog_name="graphmem")
