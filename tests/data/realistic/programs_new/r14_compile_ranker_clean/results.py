"""Per-query result table, gathered batch by batch and ranked once at the end."""
import torch


class ResultStore:
    def __init__(self):
        self._qids = []
        self._scores = []

    def add(self, qids, scores):
        self._qids.append(qids)
        self._scores.append(scores)

    def __len__(self):
        return sum(s.shape[0] for s in self._scores)

    def table(self):
        return torch.cat(self._qids), torch.cat(self._scores)

    def best_per_query(self, n_queries):
        qids, scores = self.table()
        best = torch.full((n_queries,), float("-inf"), device=scores.device)
        return best.scatter_reduce(0, qids, scores, reduce="amax")
