"""In-memory embedding store, written to disk once the export finishes."""
import torch


class EmbeddingStore:
    def __init__(self, dim):
        self.dim = dim
        self._ids = []
        self._vecs = []

    def add(self, ids, vecs):
        self._ids.append(ids)
        self._vecs.append(vecs)

    def __len__(self):
        return sum(v.shape[0] for v in self._vecs)

    def finalize(self):
        ids = torch.cat(self._ids)
        vecs = torch.cat(self._vecs)
        order = ids.argsort()
        return ids[order], vecs[order]
