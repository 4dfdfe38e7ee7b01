"""ClassificationHead: the shared layer checks, and the optional max-norm
constraint on the class weight vectors (Kim 2014)."""

import keras
import numpy as np
import pytest
from layer_checks import run_layer_test
from layer_checks import to_numpy

from keras_posattn.layers import ClassificationHead


@pytest.mark.parametrize("hidden_units, max_norm", [(0, None), (6, 3.0)])
def test_layer_checks(hidden_units, max_norm):
    x = np.random.default_rng(0).normal(size=(4, 5)).astype("float32")
    run_layer_test(
        lambda: ClassificationHead(3, hidden_units=hidden_units, logits_max_norm=max_norm,
                                   dropout=0.1),
        x,
        expected_output_shape=(4, 3),
        expected_num_trainable_weights=4 if hidden_units else 2,
    )


def test_max_norm_rescales_each_class_column():
    head = ClassificationHead(2, logits_max_norm=3.0)
    head(np.zeros((1, 4), "float32"))
    constraint = head.logits.kernel.constraint
    assert isinstance(constraint, keras.constraints.MaxNorm) and constraint.axis == 0
    kernel = np.array([[4.0, 0.1], [3.0, 0.2], [0.0, 0.3], [0.0, 0.0]], "float32")  # norms 5, ~0.37
    rescaled = to_numpy(constraint(keras.ops.convert_to_tensor(kernel)))
    np.testing.assert_allclose(np.linalg.norm(rescaled, axis=0), [3.0, np.linalg.norm(kernel[:, 1])],
                               rtol=1e-5)
    assert ClassificationHead(2).logits.kernel_constraint is None
    with pytest.raises(ValueError, match="logits_max_norm"):
        ClassificationHead(2, logits_max_norm=0.0)
