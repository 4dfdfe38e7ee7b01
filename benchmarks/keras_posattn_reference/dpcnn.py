"""DPCNN (Johnson & Zhang, ACL 2017) and DPCNN+ from stock Keras, for
``keras_posattn.models.dpcnn``.

The same function as the zoo's ``DPCNN`` (``dpcnn``: one residual block per
level; ``dpcnn_plus``: two):

- a stock ``Embedding``, padded positions set to zero, the region embedding
  as a linear stock ``Conv1D(filters, region_size, padding="same")``;
- per level, each residual block ``x + W_2 relu(W_1 relu(x))`` with stock
  ``Conv1D(padding="same")`` layers, the padded positions zeroed after every
  convolution (so padding never enters a real position's window);
- downsampling by ``MaskedDownsample`` below: padded positions filled with a
  large negative, stock ``MaxPooling1D(pool_size, strides)`` over the
  sequence padded on the right, windows starting at 0, strides, 2 strides...
  (``ceil(n / strides)`` of them: stock ``padding="same"`` pads on the left
  too for odd lengths and would shift them), the mask pooled the same way;
- max pooling over the real positions (``ops.where``, ``ops.max``),
  ``Dropout``, logits; L2 on every kernel as ours.

Every config value is supported.
"""

import keras
from keras import ops

from . import LOWEST
from . import copy_embedding
from . import copy_head
from . import copy_layer
from . import embedding
from . import head
from . import l2_factory
from . import masked_max
from . import register
from . import token_input
from . import zero_padded


class MaskedDownsample(keras.layers.Layer):
    """Max pooling of the real positions in windows ``[t s, t s + pool_size)``,
    ``t < ceil(n / s)``; returns the pooled sequence (padded outputs zero) and
    the pooled mask (a window with at least one real position)."""

    def __init__(self, pool_size=3, strides=2, **kwargs):
        super().__init__(**kwargs)
        self.pool_size = int(pool_size)
        self.strides = int(strides)
        self.pool = keras.layers.MaxPooling1D(self.pool_size, self.strides, padding="valid")

    def call(self, x, padding):
        n = ops.shape(x)[1]
        out = (n + self.strides - 1) // self.strides
        right = [(0, 0), (0, self.pool_size), (0, 0)]
        filled = ops.where(ops.expand_dims(padding, -1), x, LOWEST)
        pooled = self.pool(ops.pad(filled, right, constant_values=LOWEST))[:, :out]
        real = ops.cast(ops.expand_dims(padding, -1), x.dtype)
        new_padding = self.pool(ops.pad(real, right))[:, :out, 0] > 0
        return zero_padded(pooled, new_padding), new_padding


@register("dpcnn")
def build(config):
    c = dict(config)
    regularizer = l2_factory(c["l2"])
    filters, kernel_size = c["filters"], c["kernel_size"]

    def conv(x, name, size=kernel_size):
        return keras.layers.Conv1D(filters, size, padding="same", kernel_regularizer=regularizer(),
                                   name=name)(x)

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    x = zero_padded(embedding(c)(ids), padding)
    x = zero_padded(conv(x, "region_embedding", c["region_size"]), padding)
    for i in range(c["num_blocks"]):
        for j in range(c["convs_per_level"]):
            name = f"level_{i + 1}_block_{j + 1}"
            f = zero_padded(conv(ops.relu(x), f"{name}_conv_0"), padding)
            f = zero_padded(conv(ops.relu(f), f"{name}_conv_1"), padding)
            x = x + f
        x, padding = MaskedDownsample(c["pool_size"], c["pool_strides"],
                                      name=f"level_{i + 1}_pool")(x, padding)
    logits = head(masked_max(x, padding), c["num_classes"], dropout=c["dropout"],
                  regularizer=regularizer)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'dpcnn')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        copy_layer(ours.get_layer("region_embedding"), ref.get_layer("region_embedding"))
        for i in range(c["num_blocks"]):
            for j in range(c["convs_per_level"]):
                name = f"level_{i + 1}_block_{j + 1}"
                block = ours.get_layer(name)
                for k, conv_layer in enumerate(block.convs):
                    copy_layer(conv_layer, ref.get_layer(f"{name}_conv_{k}"))
        copy_head(ours, ref)

    return reference, transfer
