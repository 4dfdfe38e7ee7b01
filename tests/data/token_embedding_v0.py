"""How token_embedding_v0_{pretrained,random}.weights.h5/.npy were written:
with the TokenEmbedding of commit 7ba501e (``git show
7ba501e:keras_posattn/layers/token_embedding.py > old_token_embedding.py``),
whose "oov" mode always held three variables (embeddings, frozen_embeddings,
row_is_trainable). tests/test_token_embedding.py checks that weights of that
layout still load. Weights files, not .keras: a .keras file's config written
by one Keras release need not parse in an older one, and the tests also run
against the lowest supported Keras.

    python tests/data/token_embedding_v0.py old_token_embedding.py
"""

import importlib.util
import sys

import keras
import numpy as np


def model(embedding_cls):
    """The model both the writer and the test build: ids in, vectors out."""
    inputs = keras.Input((None,), dtype="int32")
    return keras.Model(inputs, embedding_cls(10, 4, trainable_rows="oov",
                                             name="token_embedding")(inputs))


if __name__ == "__main__":
    spec = importlib.util.spec_from_file_location("old_token_embedding", sys.argv[1])
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    rng = np.random.default_rng(0)
    for kind in ("pretrained", "random"):
        keras.utils.set_random_seed(1)
        net = model(old.TokenEmbedding)
        layer = net.get_layer("token_embedding")
        if kind == "pretrained":
            m = rng.normal(size=(10, 4)).astype("float32")
            m[:2] = 0
            pre = np.zeros(10, bool)
            pre[[2, 3, 5]] = True
            layer.set_pretrained(m, pre)
            layer.embeddings.assign(layer.embeddings.numpy() + 0.5)  # as if trained
        assert len(layer.weights) == 3
        net.save_weights(f"tests/data/token_embedding_v0_{kind}.weights.h5")
        np.save(f"tests/data/token_embedding_v0_{kind}.npy",
                net.predict(np.arange(10, dtype="int32")[None], verbose=0))
