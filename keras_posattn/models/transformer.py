"""Transformer encoder: the multi-head self-attention reference model, from stock Keras layers.

A small version of the encoder of Vaswani et al. (NeurIPS 2017, "Attention
Is All You Need", section 3.1), the "Multi-head" row MPSAN compares with
(Tables 1, 6, 7). It is a reference point built from stock Keras layers,
beside the zoo's own attention layers:

1. Word embedding plus learned position embeddings
   (``keras.layers.Embedding`` over positions 0..n-1, as Gehring et al. and
   HCAN learn them; Vaswani et al. also tried learned positions, section
   3.5), then dropout.
2. ``num_layers`` post-norm encoder blocks (section 3.1):
   ``x = LayerNorm(x + Dropout(MultiHeadAttention(x, x)))``, then
   ``x = LayerNorm(x + Dropout(FFN(x)))`` with
   ``FFN = Dense(d) . ReLU . Dense(ff_dim)``. ``keras.layers.MultiHeadAttention``
   gets ``attention_mask[b, i, j] = real[b, i] and real[b, j]`` built from the
   padding: padding keys are never attended.
3. Mean pooling over the real tokens, dropout, linear logits.

Padding, checked against Keras 3.15: a padded *query* row of that mask
allows no key. Without attention dropout Keras routes through
``ops.dot_product_attention``, whose TensorFlow kernel fills blocked logits
with a large finite negative, so such a row averages all values uniformly:
finite, never NaN. With attention dropout it uses its ``Softmax`` layer,
which zeroes a fully blocked row. Either way the padded positions carry
finite values that no real token attends to, and the pool ignores them. The
pool is ``MaskedGlobalPooling1D("average")``, the library's guarded masked
mean: stock ``GlobalAveragePooling1D`` divides 0 by 0 for an empty text (an
empty string at export gives NaN probabilities); this one gives zeros.

Defaults (small, for sentence tasks; Vaswani's base model is d = 512,
8 heads, ff 2048, 6 layers): d = 300 (the word vectors), 2 layers, 6 heads
of ``key_dim = d / 6 = 50`` (Vaswani's d_k = d / h), ff_dim 600, dropout
0.1 (Vaswani's P_drop) on the input sum, on each sub-layer's output before
the residual add, and before the logits; no dropout on the attention
weights; LayerNorm epsilon 1e-6. Training: Adam 1e-3, batch 64, 10 epochs
(Vaswani's warm-up schedule is for translation and is not used).

Choices, documented:

- Embeddings are not multiplied by sqrt(d) (Vaswani does, with tied
  embeddings trained from scratch; pretrained GloVe vectors already have
  the scale the learned positions start against).
- ``key_dim=None`` means ``max(1, embedding_dim // num_heads)``; the
  output projection maps the heads back to d whatever their total.
- ``max_length`` sizes the position table and is required; positions past
  it have no embedding (the preprocessor truncates texts to it).

Parameter count (embedding excluded), d = 300, 5 classes: per block,
attention 4 * (300 * 300 + 300) = 361,200 (Keras's per-head kernels, 6 x 50),
feed-forward 300 * 600 + 600 + 600 * 300 + 300 = 360,900, two layer norms
1,200: 723,300; two blocks 1,446,600; logits 1,505; positions
300 * max_length (19,200 at the preset's 64). Total 1,448,105 +
300 * max_length = 1,467,305 at 64.
"""

import keras

from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family


class _EncoderBlock:
    """The stock layers of one post-norm encoder block (not a Keras layer:
    the model holds the layers, so its summary shows them)."""

    def __init__(self, index, embedding_dim, num_heads, key_dim, ff_dim, dropout,
                 attention_dropout, epsilon, activation):
        prefix = f"block{index}"
        self.attention = keras.layers.MultiHeadAttention(
            num_heads, key_dim, dropout=attention_dropout, name=f"{prefix}_attention"
        )
        self.attention_dropout = keras.layers.Dropout(dropout, name=f"{prefix}_attention_dropout")
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=epsilon, name=f"{prefix}_attention_norm"
        )
        self.ff_inner = keras.layers.Dense(ff_dim, activation=activation, name=f"{prefix}_ff_inner")
        self.ff_outer = keras.layers.Dense(embedding_dim, name=f"{prefix}_ff_outer")
        self.ff_dropout = keras.layers.Dropout(dropout, name=f"{prefix}_ff_dropout")
        self.ff_norm = keras.layers.LayerNormalization(epsilon=epsilon, name=f"{prefix}_ff_norm")

    def __call__(self, x, attention_mask):
        a = self.attention(x, x, attention_mask=attention_mask)
        x = self.attention_norm(x + self.attention_dropout(a))
        f = self.ff_outer(self.ff_inner(x))
        return self.ff_norm(x + self.ff_dropout(f))


@register_family("transformer")
@keras.saving.register_keras_serializable(package="keras_posattn")
class Transformer(ZooModel):
    """A small Transformer encoder text classifier from stock Keras layers.

    A reference model: stock ``MultiHeadAttention`` behind a padding mask.

    Args:
        vocabulary_size, num_classes, embedding_l2, embedding_initializer: the contract's
            (``models.base``).
        max_length: rows of the learned position table (required; preset
            64).
        dropout: dropout rate on the input sum, each sub-layer's output and
            the pooled features (Vaswani: 0.1).
        embedding_dim: d_model (the word vectors' size, 300).
        trainable_embeddings: ``"oov"``, ``"all"`` or ``"none"``.
        num_layers: encoder blocks (default 2).
        num_heads: attention heads (default 6).
        ff_dim: inner width of the feed-forward network (default 600).
        key_dim: width of each head; None means
            ``max(1, embedding_dim // num_heads)``.
        attention_dropout: dropout on the attention weights (default 0).
        layer_norm_epsilon: epsilon of the layer norms (default 1e-6).
        ff_activation: the feed-forward network's activation (ReLU).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=64,
        dropout=0.1,
        embedding_dim=300,
        trainable_embeddings="oov",
        embedding_l2=0.0,
        embedding_initializer=None,
        num_layers=2,
        num_heads=6,
        ff_dim=600,
        key_dim=None,
        attention_dropout=0.0,
        layer_norm_epsilon=1e-6,
        ff_activation="relu",
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        if not max_length:
            raise ValueError("The transformer's learned positions need max_length (got None).")
        if int(num_layers) < 1 or int(num_heads) < 1:
            raise ValueError(f"num_layers and num_heads must be >= 1, got {num_layers}, {num_heads}.")
        head_width = max(1, embedding_dim // num_heads) if key_dim is None else int(key_dim)

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim,
                                        trainable_embeddings, embedding_l2,
                                        embedding_initializer)
        positions = keras.layers.Embedding(max_length, embedding_dim, name="position_embedding")
        input_dropout = keras.layers.Dropout(dropout, name="input_dropout")
        blocks = [
            _EncoderBlock(i, embedding_dim, num_heads, head_width, ff_dim, dropout,
                          attention_dropout, layer_norm_epsilon, ff_activation)
            for i in range(int(num_layers))
        ]
        pool = MaskedGlobalPooling1D("average", name="mean_pool")
        head = self.make_head(num_classes, hidden_units=0, dropout=dropout)

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        padding = keras.ops.not_equal(token_ids, 0)
        # [b, query, key]: both real. Padded query rows allow no key (see the
        # module docstring for what Keras does with them).
        attention_mask = keras.ops.logical_and(
            keras.ops.expand_dims(padding, 2), keras.ops.expand_dims(padding, 1)
        )
        position_ids = keras.ops.cumsum(keras.ops.ones_like(token_ids), axis=1) - 1
        x = input_dropout(embedding(token_ids) + positions(position_ids))
        for block in blocks:
            x = block(x, attention_mask)
        logits = head(pool(x, mask=padding))
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self.store_arguments(locals())
