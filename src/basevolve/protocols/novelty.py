"""Local code-similarity for novelty rejection (ShinkaEvolve-style; our offline default).

ShinkaEvolve embeds the EVOLVE-block code with an embedding model and rejects a
proposal whose cosine similarity to a program on the parent's island exceeds a
threshold.  basevolve needs no network for this: a program is represented by the counts
of its character 3-grams, hashed into ``DIM`` buckets, and compared by cosine
similarity.  Hashing makes it vectorised (numpy, ~50 µs per program) and deterministic
across processes; bucket collisions can only raise a similarity slightly, which matters
little at a near-duplicate threshold such as 0.995.
"""

from __future__ import annotations

import numpy as np

DIM = 2048
_MULT = np.uint64(2654435761)


def ngram_vector(text: str, n: int = 3, dim: int = DIM) -> np.ndarray:
    """Unit-norm hashed character n-gram counts of ``text`` (float32, length ``dim``)."""
    b = np.frombuffer(text.encode("utf-8"), dtype=np.uint8).astype(np.uint64)
    vec = np.zeros(dim, dtype=np.float32)
    if len(b) < n:
        if len(b):
            vec[int(b.sum()) % dim] = 1.0
        return vec
    ids = np.zeros(len(b) - n + 1, dtype=np.uint64)
    for k in range(n):
        ids = ids * np.uint64(257) + b[k : len(b) - n + 1 + k]
    buckets = ((ids * _MULT) >> np.uint64(7)) % np.uint64(dim)
    vec += np.bincount(buckets.astype(np.int64), minlength=dim).astype(np.float32)
    return vec / np.float32(np.linalg.norm(vec))


class VectorTable:
    """Rows of n-gram vectors addressed by an integer id (a member uid), growing."""

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.rows = np.zeros((64, dim), dtype=np.float32)

    def put(self, uid: int, text: str) -> None:
        if uid >= len(self.rows):
            grown = np.zeros((max(uid + 1, 2 * len(self.rows)), self.dim), dtype=np.float32)
            grown[: len(self.rows)] = self.rows
            self.rows = grown
        self.rows[uid] = ngram_vector(text, dim=self.dim)

    def max_similarity(self, text: str, uids: list[int]) -> tuple[float, int | None]:
        """Largest cosine similarity of ``text`` to the rows ``uids``, and its uid."""
        if not uids:
            return 0.0, None
        v = ngram_vector(text, dim=self.dim)
        top = max(uids) + 1
        # einsum, not BLAS matmul: one thread, no thread start-up (~4x less CPU here)
        sims = np.einsum("ij,j->i", self.rows[:top], v)[np.asarray(uids)]
        i = int(np.argmax(sims))
        return float(sims[i]), uids[i]
