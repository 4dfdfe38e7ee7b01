"""Small helpers shared by the CLI, benchmarks and tests."""

import numpy as np


def count_parameters(model, exclude_embedding=True):
    """Number of trainable parameters, optionally without the word embedding.

    Papers report sizes "without embeddings" (MPSAN's 1.09M); the embedding's
    size depends on the vocabulary, not the architecture. Layers that are
    ``keras_posattn.layers.TokenEmbedding`` or ``keras.layers.Embedding`` are
    the embedding.
    """
    from keras_posattn.layers import TokenEmbedding
    import keras

    skip = set()
    if exclude_embedding:
        for layer in model._flatten_layers(include_self=False):
            if isinstance(layer, (TokenEmbedding, keras.layers.Embedding)):
                skip.update(id(w) for w in layer.weights)
    return int(sum(np.prod(w.shape) for w in model.trainable_weights if id(w) not in skip))
