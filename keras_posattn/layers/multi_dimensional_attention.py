import keras
from keras import ops

from keras_posattn.attention_ops import masked_exponentials
from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class MultiDimensionalAttention(WeightOptions, keras.layers.Layer):
    """Pools a sequence into one vector with a per-feature softmax over time.

    DiSAN's multi-dimensional source2token attention (Shen et al. 2018,
    eqs. 15-16), MPSAN's pooling step:

        logits_t = W_2 act(W_1 x_t + b_1) + b_2      # (batch, n, d)
        p = softmax over t, per feature, padding blocked
        out = sum_t p_t * x_t                        # (batch, d)

    An empty (all-padding) sequence pools to zeros.

    Args:
        activation: activation of the hidden layer (paper: ``"elu"``).
        input_dropout: dropout rate on the inputs of the two linear maps
            (``x`` before ``W_1``, the hidden layer before ``W_2``); the pooled
            values ``x`` stay undropped (the released DiSAN/MPSAN code's
            placement).
        kernel_initializer, bias_initializer, kernel_regularizer: for W, b.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n).
        return_attention_scores: also return ``p`` (batch, n, d).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import MultiDimensionalAttention
    >>> MultiDimensionalAttention()(np.random.rand(2, 5, 8).astype("float32")).shape
    (2, 8)
    """

    def __init__(
        self,
        activation="elu",
        input_dropout=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.activation = keras.activations.get(activation)
        self.input_dropout = float(input_dropout)
        self._input_dropout_layer = keras.layers.Dropout(self.input_dropout)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        dim = input_shape[-1]
        for i in (1, 2):
            setattr(
                self,
                f"kernel_{i}",
                self.add_weight(
                    name=f"kernel_{i}",
                    shape=(dim, dim),
                    initializer=self.kernel_initializer,
                    regularizer=self.kernel_regularizer,
                ),
            )
            setattr(
                self,
                f"bias_{i}",
                self.add_weight(
                    name=f"bias_{i}", shape=(dim,), initializer=self.bias_initializer
                ),
            )

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        drop = self._input_dropout_layer
        x = drop(inputs, training=training)
        hidden = self.activation(ops.matmul(x, self.kernel_1) + self.bias_1)
        logits = ops.matmul(drop(hidden, training=training), self.kernel_2) + self.bias_2
        allowed = None if mask is None else ops.expand_dims(ops.cast(mask, "bool"), -1)
        # softmax over time, its division applied to the (b, d) pooled vector.
        exps, total = masked_exponentials(logits, allowed, axis=1)
        outputs = ops.sum(ops.cast(exps, inputs.dtype) * inputs, axis=1)
        outputs = outputs / ops.cast(ops.squeeze(total, 1), inputs.dtype)
        if return_attention_scores:
            return outputs, exps / total
        return outputs

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False, training=None):
        # compute_output_shape() cannot see return_attention_scores; without
        # this a functional call asking for the scores got the output alone.
        outputs = keras.KerasTensor(
            self.compute_output_shape(inputs.shape), dtype=self.compute_dtype
        )
        if not return_attention_scores:
            return outputs
        return outputs, keras.KerasTensor(inputs.shape, dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "activation": keras.activations.serialize(self.activation),
                "input_dropout": self.input_dropout,
                **self._weight_options_config(),
            }
        )
        return config
