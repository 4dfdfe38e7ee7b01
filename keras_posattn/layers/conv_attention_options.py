"""What HCAN's two convolutional attentions share: their arguments and their convolutions.

``ConvMultiHeadSelfAttention`` and ``TargetAttention`` both take ``units``,
``num_heads``, ``kernel_size``, ``dropout`` and the ``WeightOptions``, make
their Q / K / V with ``ELU`` or ``tanh`` of a mask-aware convolution, and drop
out attention weights. A layer mixes in ``ConvAttentionOptions``, calls
``self._init_conv_attention(...)`` and ``self._init_weight_options(...)`` in
``__init__``, makes its convolutions with ``self._masked_conv(name,
activation)``, passes ``self._weights_dropout(training)`` to
``multi_head_attention`` and adds ``self._conv_attention_config()`` to its
``get_config()``.
"""

import functools

import keras

from keras_posattn.layers.masked_conv1d import MaskedConv1D
from keras_posattn.layers.weight_options import WeightOptions


class ConvAttentionOptions(WeightOptions):
    """Mixin for HCAN-style multi-head attentions over mask-aware convolutions."""

    def _init_conv_attention(self, units, num_heads, kernel_size, dropout):
        self.units = int(units)
        self.num_heads = int(num_heads)
        if self.units % self.num_heads:
            raise ValueError(
                f"units={self.units} is not divisible by num_heads={self.num_heads}."
            )
        self.kernel_size = int(kernel_size)
        self.dropout = float(dropout)
        self.supports_masking = True
        self._dropout_layer = keras.layers.Dropout(self.dropout, dtype=self.dtype_policy)

    def _masked_conv(self, name, activation):
        """act(Conv1D(E) + b): ``units`` filters, window ``kernel_size``, "same"
        padding, padding zeroed before and after (``MaskedConv1D``)."""
        return MaskedConv1D(
            self.units,
            self.kernel_size,
            padding="same",
            activation=activation,
            name=name,
            dtype=self.dtype_policy,
            **self._dense_options(),
        )

    def _weights_dropout(self, training):
        """Dropout on attention weights, for ``multi_head_attention``."""
        return functools.partial(self._dropout_layer, training=training)

    def _conv_attention_config(self):
        return {
            "units": self.units,
            "num_heads": self.num_heads,
            "kernel_size": self.kernel_size,
            "dropout": self.dropout,
            **self._weight_options_config(),
        }
