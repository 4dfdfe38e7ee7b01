"""Small helpers shared by the CLI, benchmarks and tests."""

import numpy as np


def count_parameters(model, exclude_embedding=True):
    """Number of trainable parameters of a zoo model, optionally without its
    word embedding.

    Papers report sizes "without embeddings" (MPSAN's 1.09M); the embedding's
    size depends on the vocabulary, not the architecture. The embedding is
    the contract's ``model.embedding``.
    """
    skip = set()
    if exclude_embedding:
        skip = {id(w) for w in model.embedding.weights}
    return int(sum(np.prod(w.shape) for w in model.trainable_weights if id(w) not in skip))
