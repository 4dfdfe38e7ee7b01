"""One shared layer test, in the spirit of keras-hub's ``run_layer_test``.

``run_layer_test(make_layer, inputs, ...)`` gives any layer of the library the
same checks:

- ``get_config()`` has exactly the constructor's arguments plus the base
  ``Layer`` keys, and ``from_config`` round-trips it (same config, and the
  same outputs once the weights are copied);
- eager and symbolic (``keras.Input``) calls, with the expected shapes;
- weight counts;
- a ``.keras`` round trip of a small functional model holding the layer,
  reloaded with ``keras.saving.load_model(path, safe_mode=True)``, gives
  identical outputs;
- a training step: the gradient of a loss (a random projection of the
  outputs plus the layer's regularisation losses) is non-None and finite for
  every trainable weight, and one SGD step leaves the weights finite.

Trainable weights are set to random values first, so that zero-initialised
biases cannot hide a mistake.
"""

import inspect
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf


def as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def to_numpy(x):
    if isinstance(x, keras.Variable):
        x = x.value
    return keras.ops.convert_to_numpy(x)


def randomize_weights(layer, seed=0, scale=0.5):
    """Set every trainable weight of ``layer`` to N(0, scale^2) values."""
    rng = np.random.default_rng(seed)
    for weight in layer.trainable_weights:
        value = rng.normal(0.0, scale, size=tuple(weight.shape))
        weight.assign(value.astype(weight.dtype))


# Keys every layer config has, and keys the base Layer adds only sometimes
# (``activity_regularizer`` when set; ``autocast`` in some Keras versions).
REQUIRED_BASE_KEYS = {"name", "trainable", "dtype"}


def base_layer_config_keys():
    return REQUIRED_BASE_KEYS | set(keras.layers.Layer().get_config())


def constructor_arguments(cls):
    """Named constructor arguments; a constructor that forwards ``**kwargs`` to a
    Keras layer class it extends (``MaskedConv1D(Conv1D)``) also takes that
    class's arguments."""
    names = set()
    for klass in cls.__mro__:
        if klass in (keras.layers.Layer, keras.Model, object) or "__init__" not in vars(klass):
            continue
        params = inspect.signature(klass.__init__).parameters
        names |= {
            name
            for name, p in params.items()
            if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }
        forwards = any(p.kind == p.VAR_KEYWORD for p in params.values())
        # Stop at a constructor that forwards nothing, or at the first stock
        # Keras class (its own bases take internal arguments such as ``rank``).
        if not forwards or not klass.__module__.startswith("keras_posattn"):
            break
    return names


def _symbolic_shape(array):
    """Batch-free Input shape: sequence (middle) dimensions left as None."""
    shape = tuple(array.shape[1:])
    if np.issubdtype(array.dtype, np.integer):
        return (None,) * len(shape)
    if len(shape) >= 2:
        return (None,) * (len(shape) - 1) + (shape[-1],)
    return shape


def _call(layer, inputs, mask, call_kwargs, **extra):
    kwargs = dict(call_kwargs)
    kwargs.update(extra)
    if mask is not None:
        if isinstance(inputs, (list, tuple)):
            kwargs["mask"] = [mask] * len(inputs)
        else:
            kwargs["mask"] = mask
    return layer(inputs, **kwargs)


def _outputs_numpy(outputs):
    return [to_numpy(o) for o in as_list(outputs)]


def _assert_same_outputs(actual, expected, atol=1e-6, what=""):
    actual, expected = _outputs_numpy(actual), _outputs_numpy(expected)
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(a, e, rtol=0, atol=atol, err_msg=what)


def _functional_model(layer, input_data, mask, call_kwargs):
    """A functional model around ``layer``; returns (model, model_inputs)."""
    arrays = as_list(input_data)
    symbolic = [
        keras.Input(shape=_symbolic_shape(a), dtype=str(a.dtype), name=f"input_{i}")
        for i, a in enumerate(arrays)
    ]
    model_inputs = list(arrays)
    sym_mask = None
    if mask is not None:
        sym_mask = keras.Input(shape=(None,), dtype="bool", name="padding_mask")
        symbolic.append(sym_mask)
        model_inputs.append(np.asarray(mask))
    layer_inputs = symbolic[: len(arrays)]
    if not isinstance(input_data, (list, tuple)):
        layer_inputs = layer_inputs[0]
    outputs = _call(layer, layer_inputs, sym_mask, call_kwargs)
    model = keras.Model(symbolic, outputs)
    return model, model_inputs


def run_layer_test(
    make_layer,
    input_data,
    *,
    mask=None,
    call_kwargs=None,
    expected_output_shape=None,
    expected_num_trainable_weights=None,
    expected_num_non_trainable_weights=None,
    run_training=True,
    run_saving=True,
    seed=0,
):
    """Run the standard checks on the layer made by ``make_layer()``.

    Args:
        make_layer: zero-argument callable returning a fresh, unbuilt layer.
        input_data: a NumPy array or a list of arrays (multi-input layers).
        mask: optional bool array (batch, n) passed as the ``mask`` call
            argument (one copy per input for multi-input layers).
        call_kwargs: other constant call arguments, e.g.
            ``{"return_attention_scores": True}``.
        expected_output_shape: a shape, or a list of shapes for several
            outputs (with the concrete batch size).
        expected_num_trainable_weights / expected_num_non_trainable_weights:
            weight counts (number of variables) to check.
        run_training, run_saving: switch the slower checks.

    Returns:
        The built layer (weights randomised) and its eager outputs.
    """
    call_kwargs = dict(call_kwargs or {})
    layer = make_layer()
    cls = type(layer)

    # --- get_config: exactly the constructor arguments + base keys ---
    config = layer.get_config()
    arguments = constructor_arguments(cls)
    extra = set(config) - arguments - base_layer_config_keys()
    missing = (arguments | REQUIRED_BASE_KEYS) - set(config)
    assert not extra and not missing, (
        f"{cls.__name__}.get_config() keys differ from constructor args + base keys: "
        f"extra {sorted(extra)}, missing {sorted(missing)}"
    )
    clone = cls.from_config(config)
    assert clone.get_config() == config

    # --- eager call ---
    outputs = _call(layer, input_data, mask, call_kwargs)
    randomize_weights(layer, seed=seed)
    outputs = _call(layer, input_data, mask, call_kwargs)
    for o in _outputs_numpy(outputs):
        assert np.all(np.isfinite(o)), f"{cls.__name__}: non-finite eager output"
    if expected_output_shape is not None:
        shapes = (
            expected_output_shape
            if isinstance(expected_output_shape, list)
            else [expected_output_shape]
        )
        got = [tuple(o.shape) for o in as_list(outputs)]
        assert got == [tuple(s) for s in shapes], got
    if expected_num_trainable_weights is not None:
        assert len(layer.trainable_weights) == expected_num_trainable_weights
    if expected_num_non_trainable_weights is not None:
        assert len(layer.non_trainable_weights) == expected_num_non_trainable_weights

    # --- from_config clone gives the same outputs with the same weights ---
    _call(clone, input_data, mask, call_kwargs)
    clone.set_weights(layer.get_weights())
    _assert_same_outputs(
        _call(clone, input_data, mask, call_kwargs), outputs, what="from_config clone"
    )

    # --- symbolic call, inside a functional model ---
    model, model_inputs = _functional_model(layer, input_data, mask, call_kwargs)
    assert len(as_list(model.outputs)) == len(as_list(outputs))
    for sym, eager in zip(as_list(model.outputs), as_list(outputs)):
        # Symbolic shapes agree with eager ones wherever they are known.
        assert len(sym.shape) == len(eager.shape), (sym.shape, eager.shape)
        for s, e in zip(sym.shape[1:], eager.shape[1:]):
            assert s is None or s == e, (sym.shape, eager.shape)
        assert keras.backend.standardize_dtype(sym.dtype) == keras.backend.standardize_dtype(
            eager.dtype
        ), (sym.dtype, eager.dtype)
    _assert_same_outputs(model(model_inputs), outputs, what="functional model")

    # --- .keras round trip, safe mode ---
    if run_saving:
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "layer_test.keras")
            model.save(path)
            loaded = keras.saving.load_model(path, safe_mode=True)
        loaded_layer = loaded.get_layer(layer.name)
        assert type(loaded_layer) is cls
        assert loaded_layer.get_config() == layer.get_config()
        _assert_same_outputs(loaded(model_inputs), outputs, what=".keras round trip")

    # --- a training step ---
    if run_training:
        check_training_step(layer, input_data, mask=mask, call_kwargs=call_kwargs)

    return layer, outputs


def projection_loss(outputs, seed=1):
    """A fixed random projection of every float output, summed (a scalar)."""
    rng = np.random.default_rng(seed)
    loss = 0.0
    for o in as_list(outputs):
        if not keras.backend.is_float_dtype(o.dtype):
            continue
        r = rng.normal(size=tuple(o.shape)).astype("float32")
        loss = loss + keras.ops.sum(keras.ops.cast(o, "float32") * r)
    return loss


def gradients(layer, input_data, mask=None, call_kwargs=None, training=True):
    """Gradients of ``projection_loss`` w.r.t. float inputs and trainable weights.

    Returns ``(input_grads, weight_grads)`` as lists of NumPy arrays (None kept
    as None).
    """
    call_kwargs = dict(call_kwargs or {})
    arrays = as_list(input_data)
    tensors = [tf.convert_to_tensor(a) for a in arrays]
    watched = [t for t in tensors if t.dtype.is_floating]
    with tf.GradientTape() as tape:
        for t in watched:
            tape.watch(t)
        inputs = tensors if isinstance(input_data, (list, tuple)) else tensors[0]
        outputs = _call(layer, inputs, mask, call_kwargs, training=training)
        loss = projection_loss(outputs)
        if layer.losses:
            loss = loss + keras.ops.sum(
                keras.ops.stack([keras.ops.cast(x, "float32") for x in layer.losses])
            )
    grads = tape.gradient(loss, watched + list(layer.trainable_weights))
    grads = [None if g is None else to_numpy(tf.convert_to_tensor(g)) for g in grads]
    return grads[: len(watched)], grads[len(watched) :]


def assert_finite_gradients(layer, input_data, mask=None, call_kwargs=None):
    """Every trainable weight (and float input) has a non-None, finite gradient."""
    input_grads, weight_grads = gradients(layer, input_data, mask, call_kwargs)
    for weight, g in zip(layer.trainable_weights, weight_grads):
        assert g is not None, f"no gradient for {weight.path}"
        assert np.all(np.isfinite(g)), f"non-finite gradient for {weight.path}"
    for g in input_grads:
        assert g is not None and np.all(np.isfinite(g)), "bad input gradient"
    return input_grads, weight_grads


def check_training_step(layer, input_data, mask=None, call_kwargs=None, lr=0.05):
    """Finite gradients, then one SGD step that keeps the weights finite."""
    _, weight_grads = assert_finite_gradients(layer, input_data, mask, call_kwargs)
    if not layer.trainable_weights:
        return
    before = [to_numpy(w) for w in layer.trainable_weights]
    optimizer = keras.optimizers.SGD(learning_rate=lr)
    optimizer.apply_gradients(zip(weight_grads, layer.trainable_weights))
    after = [to_numpy(w) for w in layer.trainable_weights]
    for w in after:
        assert np.all(np.isfinite(w))
    assert any(not np.array_equal(a, b) for a, b in zip(after, before)), (
        "a training step changed no weight"
    )
