import keras
from keras import ops

from keras_posattn.layers.masked_conv1d import MaskedConv1D
from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class MultiRegionEmbedding(WeightOptions, keras.layers.Layer):
    """Parallel convolutions of several region sizes over the word embeddings, concatenated.

    EPN's multi-region embedding (section 2.2): region sizes 3, 4 and 5 with
    30, 30 and 40 feature maps, concatenated into 100 channels, after Johnson
    & Zhang's region embedding. The paper gives no activation; the default is
    linear (the region embedding of DPCNN is linear too, and every later
    convolution pre-activates its input), ``activation`` sets one. Each
    convolution is mask-aware ("same" padding, padding never inside a real
    position's window); the mask passes through.

    Args:
        region_sizes: the convolution windows.
        filters: feature maps per region size.
        activation: applied to each region's maps (default: none).
        kernel_initializer, bias_initializer, kernel_regularizer: for the
            convolutions.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MultiRegionEmbedding
    >>> MultiRegionEmbedding()(np.random.rand(2, 7, 16).astype("float32")).shape
    (2, 7, 100)
    """

    def __init__(
        self,
        region_sizes=(3, 4, 5),
        filters=(30, 30, 40),
        activation=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.region_sizes = [int(r) for r in region_sizes]
        self.filters = [int(f) for f in filters]
        if len(self.region_sizes) != len(self.filters) or not self.region_sizes:
            raise ValueError(
                f"region_sizes {self.region_sizes} and filters {self.filters} must have the same, "
                "non-zero length."
            )
        self.activation = keras.activations.get(activation)
        self.supports_masking = True
        self.convs = [
            MaskedConv1D(f, r, padding="same", activation=self.activation,
                         name=f"region_{r}", dtype=self.dtype_policy, **self._dense_options())
            for r, f in zip(self.region_sizes, self.filters)
        ]

    def build(self, input_shape):
        for conv in self.convs:
            conv.build(input_shape)

    def call(self, inputs, mask=None):
        return ops.concatenate([conv(inputs, mask=mask) for conv in self.convs], axis=-1)

    def compute_mask(self, inputs, mask=None):
        return mask

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], sum(self.filters))

    def get_config(self):
        config = super().get_config()
        config.update({
            "region_sizes": list(self.region_sizes),
            "filters": list(self.filters),
            "activation": keras.activations.serialize(self.activation),
            **self._weight_options_config(),
        })
        return config
