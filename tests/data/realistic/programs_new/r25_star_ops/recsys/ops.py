"""Id and pooling ops shared by the ranking models."""
import torch

__all__ = ["hash_ids", "dedup_ids", "bag_mean", "pairwise_dots"]


def hash_ids(raw_ids, num_rows):
    """Fold raw 63-bit feature ids into a table of ``num_rows`` rows (the hashing trick)."""
    return torch.remainder(raw_ids, num_rows)


def dedup_ids(ids):
    """Rows to fetch for a batch of ids, and for every id its position among those rows.

    Popular items show up many times in one batch; grouping equal ids before the
    gather keeps the reads from the large tables close together.
    """
    flat = ids.reshape(-1)
    rows, inverse = torch.unique(flat, sorted=True, return_inverse=True)
    return rows, inverse.view_as(ids)


def bag_mean(vecs, lengths, pos):
    """Mean over the first ``lengths[b]`` vectors of each bag; vecs is (B, L, D)."""
    mask = (pos[None, :] < lengths[:, None]).to(vecs.dtype)
    total = (vecs * mask[..., None]).sum(dim=1)
    return total / lengths.clamp(min=1)[:, None].to(vecs.dtype)


def pairwise_dots(feats, rows, cols):
    """Upper-triangle dot products between the F feature vectors of each sample; feats is (B, F, D)."""
    gram = torch.bmm(feats, feats.transpose(1, 2))
    return gram[:, rows, cols]
