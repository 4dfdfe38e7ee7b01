"""Weights as the released TF1 code of MPSAN and DiSAN makes them.

Both papers' code builds every linear map with Glorot-uniform kernels, zero
biases and weight decay ``wd`` in TF1's convention, ``wd *
tf.nn.l2_loss(w) = wd * sum(w ** 2) / 2`` on the kernel, which is Keras'
``L2(wd / 2)``.
"""

import keras


def tf1_weight_options(wd):
    """Keyword arguments for a Keras layer with the TF1 code's weights (a
    fresh dict on every call: regularizers are not shared between layers)."""
    return {
        "kernel_initializer": "glorot_uniform",
        "bias_initializer": "zeros",
        "kernel_regularizer": keras.regularizers.L2(wd / 2.0) if wd else None,
    }
