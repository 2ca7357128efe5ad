"""Retrieval by meaning, with the hard filters first (graphmem/retrieval/rank.py), and the
embedders and stored vectors it needs (embedders.py, store.py)."""

from .embedders import Embedder, ToyEmbedder, as_embedder, from_spec
from .rank import run as search
from .store import backfill

__all__ = ["Embedder", "ToyEmbedder", "as_embedder", "backfill", "from_spec", "search"]
