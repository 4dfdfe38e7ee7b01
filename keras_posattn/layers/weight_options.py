"""The initializer / regularizer arguments most layers of the library share.

A layer that takes ``kernel_initializer``, ``bias_initializer`` and
``kernel_regularizer`` mixes in ``WeightOptions``, stores them with
``self._init_weight_options(...)`` in ``__init__`` and adds
``self._weight_options_config()`` to its ``get_config()``; the three keys are
then serialised the same way everywhere.
"""

import keras


class WeightOptions:
    """Mixin for layers with kernel/bias initializers and a kernel regularizer."""

    def _init_weight_options(
        self,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
    ):
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)

    def _weight_options_config(self):
        return {
            "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
        }

    def _dense_options(self):
        """Keyword arguments that give a ``keras.layers.Dense`` (or Conv1D) sublayer
        the same options (fresh copies, so sublayers never share an initializer)."""
        return {
            "kernel_initializer": keras.initializers.get(
                keras.initializers.serialize(self.kernel_initializer)
            ),
            "bias_initializer": keras.initializers.get(
                keras.initializers.serialize(self.bias_initializer)
            ),
            "kernel_regularizer": keras.regularizers.get(
                keras.regularizers.serialize(self.kernel_regularizer)
            ),
        }
