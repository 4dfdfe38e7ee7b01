import keras
from keras import ops

from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.weight_options import WeightOptions

BIASES = ("position", "shared")


@keras.saving.register_keras_serializable(package="keras_posattn")
class PositionFusion(WeightOptions, keras.layers.Layer):
    """Fuses k sources with per-feature softmax weights computed from tokens.

    MPSAN's Position-Fusion Layer with Tokens-Position-Weight (Dai et al.
    2020, eqs. 13-16). Given sources ``[s_1, ..., s_{k-1}, w]`` (each
    (batch, n, d)) whose LAST entry is the token representation ``w``:

        a = softmax_k(W_P^T w + b_P)       # (batch, n, k, d): per feature
        o = sum_k a_k * source_k           # (batch, n, d)

    ``W_P`` is (d_w, k*d). The paper gives a position-dependent bias
    ``b_P`` in R^{k d x n} (``bias="position"``, which needs ``max_length``;
    the bias is sliced to the batch's length, so a sequence longer than
    ``max_length`` is an error); the released code uses one shared bias of
    size ``k*d`` (``bias="shared"``).

    Args:
        bias: ``"position"`` (paper) or ``"shared"`` (released code).
        max_length: int, the longest sequence, required for
            ``bias="position"``.
        input_dropout: dropout rate on ``w`` where it enters ``W_P`` only;
            the fused sources stay undropped (the released code's placement).
        kernel_initializer, bias_initializer, kernel_regularizer: for W_P, b_P.

    Call arguments:
        inputs: list of k float tensors (batch, n, d); the last is ``w``.
        mask: Keras padding mask(s); padding positions output zeros.
        return_weights: also return ``a`` (batch, n, k, d).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import PositionFusion
    >>> s1, s2, w = (np.random.rand(2, 6, 8).astype("float32") for _ in range(3))
    >>> PositionFusion(bias="position", max_length=6)([s1, s2, w]).shape
    (2, 6, 8)
    """

    def __init__(
        self,
        bias="position",
        max_length=None,
        input_dropout=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if bias not in BIASES:
            raise ValueError(f"bias must be one of {BIASES}, got {bias!r}.")
        if bias == "position" and not max_length:
            raise ValueError(
                "PositionFusion(bias='position') needs max_length: the paper's "
                "bias b_P has one column per position."
            )
        self.bias = bias
        self.max_length = None if max_length is None else int(max_length)
        self.input_dropout = float(input_dropout)
        self._input_dropout_layer = keras.layers.Dropout(self.input_dropout)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.supports_masking = True

    def build(self, input_shape):
        if not isinstance(input_shape, (list, tuple)) or len(input_shape) < 2:
            raise ValueError("PositionFusion expects a list of at least 2 sources.")
        self.num_sources = len(input_shape)
        dims = {shape[-1] for shape in input_shape}
        if len(dims) != 1:
            raise ValueError(
                f"PositionFusion sources must share their last dimension, got {sorted(dims)}."
            )
        self.units = dims.pop()
        token_dim = input_shape[-1][-1]
        width = self.num_sources * self.units
        self.kernel = self.add_weight(
            name="kernel",
            shape=(token_dim, width),
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
        )
        bias_shape = (self.max_length, width) if self.bias == "position" else (width,)
        self.bias_weight = self.add_weight(
            name="bias", shape=bias_shape, initializer=self.bias_initializer
        )

    def call(self, inputs, mask=None, return_weights=False, training=None):
        tokens = inputs[-1]
        scored = self._input_dropout_layer(tokens, training=training)
        logits = ops.matmul(scored, self.kernel)  # (b, n, k*d)
        if self.bias == "position":
            n = ops.shape(tokens)[1]
            logits = logits + self._position_bias(n)
        else:
            logits = logits + self.bias_weight
        # softmax over the k sources, per feature, written out on the k
        # (b, n, d) slices of the logits: no (b, n, k, d) stack of the sources
        # (whose gradient is a strided unstack), and the division applied to
        # the (b, n, d) fused output rather than to the k weights.
        logits = [ops.cast(x, "float32") for x in ops.split(logits, self.num_sources, axis=-1)]
        peak = logits[0]
        for x in logits[1:]:
            peak = ops.maximum(peak, x)
        # The max is a constant shift (the softmax does not depend on it) and
        # one of the k exponentials is exp(0) = 1, so the total is >= 1.
        peak = ops.stop_gradient(peak)
        exps = [ops.exp(x - peak) for x in logits]
        # Accumulated in float32 (a no-op cast in float32; under a float16 or
        # bfloat16 policy the k products are not rounded one by one).
        total = exps[0]
        outputs = exps[0] * ops.cast(inputs[0], "float32")
        for weight, source in zip(exps[1:], inputs[1:]):
            total = total + weight
            outputs = outputs + weight * ops.cast(source, "float32")
        outputs = ops.cast(outputs / total, inputs[0].dtype)
        padding = mask[-1] if isinstance(mask, (list, tuple)) else mask
        outputs = zero_padding(outputs, padding)
        if return_weights:
            return outputs, ops.stack([weight / total for weight in exps], axis=2)
        return outputs

    def _position_bias(self, n):
        """The first ``n`` columns of b_P; a longer sequence is an error that
        names the limit, eagerly and inside a ``tf.function``. (Under XLA the
        assertion is compiled away; a trace with a static length still gets
        the ValueError, a generalised one fails to compile the slice:
        "Expected size[0] in [0, max_length], but got n".)"""
        message = (
            f"PositionFusion(bias='position') was built for max_length={self.max_length} "
            "(the paper's b_P has one column per position) but got a longer sequence; "
            "truncate inputs to max_length (the model's preprocessor does)."
        )
        width = self.bias_weight.shape[-1]
        if isinstance(n, int):
            if n > self.max_length:
                raise ValueError(f"{message} Got {n} tokens.")
            return self.bias_weight[:n]
        import tensorflow as tf

        check = tf.debugging.assert_less_equal(n, self.max_length, message=message)
        with tf.control_dependencies([check]):
            n = tf.identity(n)
        # A slice of explicit size, not bias[:n]: a strided slice clamps to
        # max_length under XLA (where the assertion is dropped), and with
        # max_length=1 the clamped bias would broadcast silently.
        return ops.slice(self.bias_weight, (0, 0), (n, width))

    def compute_mask(self, inputs, mask=None):
        if isinstance(mask, (list, tuple)):
            return mask[-1]
        return mask

    def compute_output_shape(self, input_shape):
        return input_shape[-1]

    def compute_output_spec(self, inputs, mask=None, return_weights=False, training=None):
        # compute_output_shape() cannot see return_weights; without this a
        # functional call asking for the weights got the output alone.
        tokens = inputs[-1]
        outputs = keras.KerasTensor(tokens.shape, dtype=self.compute_dtype)
        if not return_weights:
            return outputs
        batch, n, dim = tokens.shape
        return outputs, keras.KerasTensor((batch, n, len(inputs), dim), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bias": self.bias,
                "max_length": self.max_length,
                "input_dropout": self.input_dropout,
                **self._weight_options_config(),
            }
        )
        return config
