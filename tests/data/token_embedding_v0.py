"""How token_embedding_v0_{pretrained,random}.keras/.npy were written: with
the TokenEmbedding of commit 7ba501e, whose "oov" mode always held three
variables (embeddings, frozen_embeddings, row_is_trainable). Kept so that
tests/test_token_embedding.py can check files of that layout still load;
running it today writes files of the current layout."""

import keras
import numpy as np

from keras_posattn.layers import TokenEmbedding

rng = np.random.default_rng(0)
ids = np.arange(10, dtype="int32")[None]
for kind in ("pretrained", "random"):
    keras.utils.set_random_seed(1)
    inp = keras.Input((None,), dtype="int32")
    layer = TokenEmbedding(10, 4, trainable_rows="oov", name="token_embedding")
    model = keras.Model(inp, layer(inp))
    if kind == "pretrained":
        m = rng.normal(size=(10, 4)).astype("float32")
        m[:2] = 0
        pre = np.zeros(10, bool)
        pre[[2, 3, 5]] = True
        layer.set_pretrained(m, pre)
        layer.embeddings.assign(layer.embeddings.numpy() + 0.5)  # as if trained
    model.save(f"tests/data/token_embedding_v0_{kind}.keras")
    np.save(f"tests/data/token_embedding_v0_{kind}.npy", model.predict(ids, verbose=0))
