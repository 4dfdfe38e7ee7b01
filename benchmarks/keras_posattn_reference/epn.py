"""EPN written from stock Keras: the reference the zoo's ``epn*`` presets are timed against.

A functional model of ``keras.layers`` (Embedding, Dropout, Conv1D,
MaxPooling1D, Bidirectional LSTM, MultiHeadAttention, GlobalMaxPooling1D,
Dense) and ``keras.ops``, computing what ``keras_posattn.models.epn.EPN``
computes. Stock ``Conv1D``, ``MaxPooling1D`` and ``GlobalMaxPooling1D`` ignore
Keras masks, so the padding mask ``pad`` (batch, n) is carried by hand, the
way a careful user does it:

- embedding, dropout, padding zeroed; the multi-region embedding is one
  ``Conv1D(filters, region, padding="same")`` per region size, concatenated,
  padding zeroed again (a window reaching past the last real token then sees
  zeros, as ours does);
- each pyramid block:

  1. padding filled with -1e9, ``MaxPooling1D(2, padding="same")`` (for pool 2,
     stride 2 TensorFlow's "same" pads one position on the right only, so
     windows start at 0, 2, 4... like ours); the mask is pooled the same way
     (a window is real if it holds a real token) and the pooled padding
     zeroed;
  2. ``Bidirectional(LSTM(units / 2))`` with the pooled mask, padding zeroed;
  3. stock ``MultiHeadAttention(num_heads, key_dim=units / num_heads)`` as
     self-attention with a dense (batch, n, n) ``attention_mask`` "query and
     key are real" (its projections have biases and it scales by
     sqrt(key_dim), as ours does), padding rows zeroed;
  4. ``x + f(x)``, f = two times ReLU -> ``Conv1D(units, kernel_size,
     padding="same")`` -> padding zeroed;

- padding filled with -1e9, ``GlobalMaxPooling1D``, an empty text set to zeros
  (as ours), and the logits ``Dense``.

Weights are copied by ``transfer``: the embedding table
(``TokenEmbedding.table()``), each region convolution, and per block the
Bi-LSTM (``PyramidBlock.recurrent``), the attention's ``query``/``key``/
``value``/``output`` Dense layers into MultiHeadAttention's einsum kernels
(a (d, units) kernel reshaped to (d, heads, units / heads), the output
kernel (units, d) to (heads, units / heads, d); unit ``u`` is head
``u // (units / heads)`` in both), and the two convolutions; the head's
logits layer (``head_logits``) last.

Every preset of ``zoo/epn.toml`` is supported; ``region_activation`` is any
Keras activation. ``trainable_embeddings="oov"`` trains the whole table.
"""

import keras
from keras import ops

from . import copy_embedding
from . import copy_head
from . import embedding
from . import head
from . import l2_factory
from . import register

# Below any activation here, so padding never wins a max (-inf in float16: the
# windows and texts left with no real position are then set to 0 by
# ``ops.where``, never by a product, which would give NaN).
_FILL = -1e9


@register("epn")
def build(config):
    """A stock-Keras EPN for ``config`` (``EPN.get_config()``), and its ``transfer``."""
    units = int(config["units"])
    num_heads = int(config["num_heads"])
    if units % num_heads or units % 2:
        raise NotImplementedError(
            f"EPN reference: units={units} must be even and divisible by num_heads={num_heads}.")
    regularizer = l2_factory(config["l2"])
    region_sizes = [int(r) for r in config["region_sizes"]]
    region_filters = [int(f) for f in config["region_filters"]]
    num_blocks = int(config["num_blocks"])

    token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
    pad = ops.not_equal(token_ids, 0)

    def zero(x, mask):
        return x * ops.cast(ops.expand_dims(mask, -1), x.dtype)

    x = embedding(config)(token_ids)
    x = zero(keras.layers.Dropout(config["dropout"], name="embedding_dropout")(x), pad)
    regions = [
        keras.layers.Conv1D(f, r, padding="same", activation=config["region_activation"],
                            kernel_regularizer=regularizer(), name=f"region_{i}")(x)
        for i, (r, f) in enumerate(zip(region_sizes, region_filters))
    ]
    x = zero(ops.concatenate(regions, axis=-1) if len(regions) > 1 else regions[0], pad)

    for k in range(1, num_blocks + 1):
        # 1. Halve the length and the mask; padding never wins a window.
        x = keras.layers.MaxPooling1D(2, padding="same", name=f"pool_{k}")(
            ops.where(ops.expand_dims(pad, -1), x, _FILL))
        pooled_mask = keras.layers.MaxPooling1D(2, padding="same", name=f"pool_mask_{k}")(
            ops.expand_dims(ops.cast(pad, "float32"), -1))
        pad = ops.squeeze(pooled_mask, -1) > 0.5
        x = ops.where(ops.expand_dims(pad, -1), x, 0.0)
        # 2. Bi-LSTM over the real positions.
        lstm = keras.layers.LSTM(units // 2, return_sequences=True)
        x = zero(keras.layers.Bidirectional(lstm, name=f"bilstm_{k}")(x, mask=pad), pad)
        # 3. Multi-head self-attention over the real positions.
        allowed = ops.logical_and(ops.expand_dims(pad, 1), ops.expand_dims(pad, 2))
        attention = keras.layers.MultiHeadAttention(
            num_heads, key_dim=units // num_heads, dropout=config["attention_dropout"],
            kernel_regularizer=regularizer(), name=f"attention_{k}")
        x = zero(attention(x, x, attention_mask=allowed), pad)
        # 4. Pre-activation residual convolutions x + f(x).
        h = x
        for j in range(2):
            h = keras.layers.Conv1D(units, int(config["kernel_size"]), padding="same",
                                    kernel_regularizer=regularizer(),
                                    name=f"conv_{k}_{j}")(ops.relu(h))
            h = zero(h, pad)
        x = x + h

    pooled = keras.layers.GlobalMaxPooling1D(name="global_max_pool")(
        ops.where(ops.expand_dims(pad, -1), x, _FILL))
    pooled = ops.where(ops.any(pad, axis=1, keepdims=True), pooled, 0.0)
    logits = head(pooled, int(config["num_classes"]), regularizer=regularizer)
    reference = keras.Model(token_ids, logits, name="epn_reference")

    def transfer(ours, ref):
        """Copy ``ours`` (a zoo EPN) into ``ref`` (the model above)."""
        copy_embedding(ours, ref)
        for i, conv in enumerate(ours.get_layer("multi_region").convs):
            ref.get_layer(f"region_{i}").set_weights(conv.get_weights())
        heads, width = num_heads, units // num_heads
        for k in range(1, num_blocks + 1):
            block = ours.get_layer(f"pyramid_{k}")
            ref.get_layer(f"bilstm_{k}").set_weights(block.recurrent.get_weights())
            mha = []
            for dense in (block.attention.query, block.attention.key, block.attention.value):
                kernel, bias = dense.get_weights()
                mha += [kernel.reshape(kernel.shape[0], heads, width), bias.reshape(heads, width)]
            kernel, bias = block.attention.output_dense.get_weights()
            mha += [kernel.reshape(heads, width, kernel.shape[-1]), bias]
            ref.get_layer(f"attention_{k}").set_weights(mha)
            for j, conv in enumerate(block.convolutions.convs):
                ref.get_layer(f"conv_{k}_{j}").set_weights(conv.get_weights())
        copy_head(ours, ref)

    return reference, transfer
