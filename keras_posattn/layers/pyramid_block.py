import keras

from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers.masked_max_pooling1d import MaskedMaxPooling1D
from keras_posattn.layers.multi_head_self_attention import MultiHeadSelfAttention
from keras_posattn.layers.residual_conv_block import ResidualConvBlock
from keras_posattn.layers.weight_options import WeightOptions
from keras_posattn.utils import bidirectional


@keras.saving.register_keras_serializable(package="keras_posattn")
class PyramidBlock(WeightOptions, keras.layers.Layer):
    """EPN's pyramid block: pool the length by half, then Bi-LSTM, self-attention, convolutions.

    Extensive Pyramid Network, section 2.3 and Figure 1:

    1. max pooling, size 2 (``MaskedMaxPooling1D``): the length **and the
       padding mask** halve, so padded positions never reach a real one at any
       level of the pyramid;
    2. a Bi-LSTM, ``lstm_units`` per direction, concatenated (paper: 50 + 50),
       which skips padded steps in both directions;
    3. multi-head self-attention (``MultiHeadSelfAttention``; paper: d = 100,
       10 heads) over the real positions;
    4. the convolutional block ``x + f(x)``, ``f`` two pre-activation
       convolutions (ReLU, kernel 3, ``units`` maps) (``ResidualConvBlock``).

    The paper puts no shortcut or normalisation around the attention; the x of
    ``x + f(x)`` is the attention's output. ``units`` must equal
    ``2 * lstm_units`` (the Bi-LSTM's width, which the attention keeps).

    Two deviations, off by default, let a deep pyramid train
    (``benchmarks/EPN_NOTES.md``): ``shortcuts`` around the Bi-LSTM and the
    attention (``x + BiLSTM(x)``, ``x + attention(x)``) and ``block_norm``, a
    LayerNorm on the block's output. Without them, signal and gradients
    shrink through every block: at initialisation the attention is uniform,
    so its output is the mean of its values at every position (the next
    block gets a constant sequence), and each Bi-LSTM passes on less of the
    difference between texts than it gets.

    A text shorter than the pyramid is deep keeps at least one position: a
    window holding one real token pools to it, so lengths go 5, 3, 2, 1, 1...
    and the remaining blocks work on that single position.

    Args:
        units: width of the attention and the convolutions (paper: 100).
        lstm_units: Bi-LSTM units per direction (paper: 50).
        num_heads: attention heads (paper: 10).
        kernel_size: convolution window (paper: 3).
        pool_size: the pooling window and stride (paper: 2).
        dropout: dropout rate on the attention weights.
        shortcuts: sub-layers that get a shortcut ``x + sublayer(x)``, any
            of ``"bilstm"`` (the block's input must then be ``units`` wide)
            and ``"attention"`` (default none: the paper).
        block_norm: a LayerNorm over the features of each position of the
            block's output (default False: the paper).
        kernel_initializer, bias_initializer, kernel_regularizer: for the
            attention projections and the convolutions.

    Call arguments:
        inputs: float tensor (batch, n, d).
        mask: Keras padding mask (batch, n).
        return_attention_scores: also return the attention weights
            (batch, heads, ceil(n / 2), ceil(n / 2)).

    Returns:
        (batch, ceil(n / 2), units); its Keras mask is the halved mask.

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import PyramidBlock
    >>> block = PyramidBlock(units=8, lstm_units=4, num_heads=2)
    >>> block(np.random.rand(2, 7, 8).astype("float32")).shape
    (2, 4, 8)
    """

    def __init__(
        self,
        units=100,
        lstm_units=50,
        num_heads=10,
        kernel_size=3,
        pool_size=2,
        dropout=0.0,
        shortcuts=(),
        block_norm=False,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.units = int(units)
        self.lstm_units = int(lstm_units)
        if self.units != 2 * self.lstm_units:
            raise ValueError(
                f"units ({self.units}) must be twice lstm_units ({self.lstm_units}): the "
                "attention and the convolutions keep the Bi-LSTM's width."
            )
        self.num_heads = int(num_heads)
        self.kernel_size = int(kernel_size)
        self.pool_size = int(pool_size)
        self.dropout = float(dropout)
        self.shortcuts = _sublayers(shortcuts)
        self.block_norm = bool(block_norm)
        self.supports_masking = True
        self.pool = MaskedMaxPooling1D(self.pool_size, name="pool", dtype=self.dtype_policy)
        self.recurrent = bidirectional(
            keras.layers.LSTM(self.lstm_units, return_sequences=True,
                              kernel_regularizer=self.kernel_regularizer,
                              dtype=self.dtype_policy),
            name="bilstm", dtype=self.dtype_policy,
        )
        self.attention = MultiHeadSelfAttention(
            self.num_heads, units=self.units, dropout=self.dropout, name="attention",
            dtype=self.dtype_policy, **self._dense_options(),
        )
        self.convolutions = ResidualConvBlock(
            self.units, self.kernel_size, name="convolutions", dtype=self.dtype_policy,
            **self._dense_options(),
        )
        if self.block_norm:
            self.norm = keras.layers.LayerNormalization(name="norm", dtype=self.dtype_policy)

    def build(self, input_shape):
        if "bilstm" in self.shortcuts and input_shape[-1] != self.units:
            raise ValueError(
                f"A shortcut around the Bi-LSTM adds the block's input to its output: the "
                f"input needs units={self.units} channels, got {input_shape[-1]}."
            )
        pooled = self.pool.compute_output_shape(input_shape)
        self.recurrent.build(pooled)
        hidden = (*pooled[:-1], self.units)
        self.attention.build(hidden)
        self.convolutions.build(hidden)
        if self.block_norm:
            self.norm.build(hidden)

    def call(self, inputs, mask=None, return_attention_scores=False, training=None):
        stages, weights = self.stage_outputs(inputs, mask=mask, training=training)
        x = list(stages.values())[-1]
        if return_attention_scores:
            return x, weights
        return x

    def stage_outputs(self, inputs, mask=None, training=None):
        """Every stage's output, in order, and the attention weights.

        Returns ``(stages, weights)``: ``stages`` maps ``"pool"``,
        ``"bilstm"``, ``"attention"``, ``"convolutions"`` (and ``"norm"``
        with ``block_norm``) to (batch, ceil(n / 2), width) tensors, shortcuts
        included (the last is the block's output; all are zero at padding);
        the block's ``call`` is this. For inspection of a pyramid's signal
        (``benchmarks/epn_diagnosis.py``).
        """
        pooled_mask = self.pool.compute_mask(inputs, mask)
        stages = {"pool": self.pool(inputs, mask=mask)}
        stages["bilstm"] = zero_padding(
            self.recurrent(stages["pool"], mask=pooled_mask, training=training), pooled_mask)
        if "bilstm" in self.shortcuts:
            stages["bilstm"] = stages["pool"] + stages["bilstm"]
        stages["attention"], weights = self.attention(
            stages["bilstm"], mask=pooled_mask, return_attention_scores=True, training=training)
        if "attention" in self.shortcuts:
            stages["attention"] = stages["bilstm"] + stages["attention"]
        stages["convolutions"] = self.convolutions(stages["attention"], mask=pooled_mask)
        if self.block_norm:
            stages["norm"] = zero_padding(self.norm(stages["convolutions"]), pooled_mask)
        return stages, weights

    def compute_mask(self, inputs, mask=None):
        return self.pool.compute_mask(inputs, mask)

    def compute_output_shape(self, input_shape):
        return (*self.pool.compute_output_shape(input_shape)[:-1], self.units)

    def compute_output_spec(self, inputs, mask=None, return_attention_scores=False, training=None):
        shape = self.compute_output_shape(inputs.shape)
        outputs = keras.KerasTensor(shape, dtype=self.compute_dtype)
        if not return_attention_scores:
            return outputs
        n = shape[1]
        return outputs, keras.KerasTensor((shape[0], self.num_heads, n, n), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update({
            "units": self.units,
            "lstm_units": self.lstm_units,
            "num_heads": self.num_heads,
            "kernel_size": self.kernel_size,
            "pool_size": self.pool_size,
            "dropout": self.dropout,
            "shortcuts": list(self.shortcuts),
            "block_norm": self.block_norm,
            **self._weight_options_config(),
        })
        return config


SUBLAYERS = ("bilstm", "attention")


def _sublayers(names):
    """``shortcuts`` as a tuple of known sub-layer names, in block order."""
    names = (names,) if isinstance(names, str) else tuple(names or ())
    unknown = sorted(set(names) - set(SUBLAYERS))
    if unknown:
        raise ValueError(f"Unknown shortcut(s) {unknown}: choose among {list(SUBLAYERS)}.")
    return tuple(name for name in SUBLAYERS if name in names)
