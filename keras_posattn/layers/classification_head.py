import keras

from keras_posattn.layers.weight_options import WeightOptions


@keras.saving.register_keras_serializable(package="keras_posattn")
class ClassificationHead(WeightOptions, keras.layers.Layer):
    """The classifier every zoo model ends with: pooled features in, logits out.

    ``dropout -> [Dense(hidden_units, activation) -> dropout] -> Dense(num_classes)``:
    dropout on the input of each linear map, an optional hidden layer (MPSAN
    and DiSAN put a dense layer of ``d`` units before the softmax classifier;
    most other papers go straight to the logits), and class logits in
    float32 under any dtype policy (the softmax belongs to the loss and to
    the exported signature).

    Args:
        num_classes: number of classes.
        hidden_units: units of the hidden layer; 0 for none.
        activation: the hidden layer's activation.
        dropout: dropout rate on the input of each linear map.
        use_bias: whether the logits layer has a bias (the released MPSAN code's
            has none).
        logits_max_norm: if set, after every optimizer step each class's
            weight vector (a column of the logits kernel) is rescaled to this
            l2 norm when it is longer (Kim 2014's max-norm constraint, s = 3;
            ``keras.constraints.MaxNorm(s, axis=0)``). None for none.
        kernel_initializer, bias_initializer, kernel_regularizer: for both
            dense layers.

    Call arguments:
        inputs: float tensor (batch, d).

    Example:

    >>> import numpy as np
    >>> from keras_posattn.layers import ClassificationHead
    >>> ClassificationHead(5, hidden_units=8)(np.zeros((2, 16), "float32")).shape
    (2, 5)
    """

    def __init__(
        self,
        num_classes,
        hidden_units=0,
        activation="relu",
        dropout=0.0,
        use_bias=True,
        logits_max_norm=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._init_weight_options(kernel_initializer, bias_initializer, kernel_regularizer)
        self.num_classes = int(num_classes)
        self.hidden_units = int(hidden_units or 0)
        self.activation = keras.activations.get(activation)
        self.dropout = float(dropout)
        self.use_bias = bool(use_bias)
        self.logits_max_norm = None if logits_max_norm is None else float(logits_max_norm)
        if self.logits_max_norm is not None and self.logits_max_norm <= 0:
            raise ValueError(f"logits_max_norm must be positive or None, got {logits_max_norm}.")
        self.hidden_dropout = keras.layers.Dropout(self.dropout, name="hidden_dropout")
        self.hidden = None
        if self.hidden_units:
            self.hidden = keras.layers.Dense(
                self.hidden_units,
                activation=self.activation,
                name="hidden",
                dtype=self.dtype_policy,
                **self._dense_options(),
            )
        self.logits_dropout = keras.layers.Dropout(self.dropout, name="logits_dropout")
        self.logits = keras.layers.Dense(
            self.num_classes, use_bias=self.use_bias, name="logits", dtype="float32",
            kernel_constraint=(
                None if self.logits_max_norm is None
                else keras.constraints.MaxNorm(self.logits_max_norm, axis=0)
            ),
            **self._dense_options(),
        )

    def build(self, input_shape):
        if self.hidden is not None:
            self.hidden.build(input_shape)
            input_shape = (*input_shape[:-1], self.hidden_units)
        self.logits.build(input_shape)

    def call(self, inputs, training=None):
        x = inputs
        if self.hidden is not None:
            x = self.hidden(self.hidden_dropout(x, training=training))
        return self.logits(self.logits_dropout(x, training=training))

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.num_classes)

    def compute_output_spec(self, inputs, training=None):
        # Logits are float32 whatever the policy (Keras would assume the
        # compute dtype).
        return keras.KerasTensor(self.compute_output_shape(inputs.shape), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_classes": self.num_classes,
                "hidden_units": self.hidden_units,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "logits_max_norm": self.logits_max_norm,
                **self._weight_options_config(),
            }
        )
        return config
