"""``keras_posattn.utils.bidirectional``: Keras's ``Bidirectional`` made
safe to build inside ``load_model``'s object-sharing scope (which matches
objects by ``id()``; a freed temporary layer's id can come back for the next
wrapper's layer). EPN's pyramid blocks, CSPAN's Bi-LSTM stack, HAN's GRUs and
the BiLSTM baseline use it."""

import gc
import weakref

import keras
import pytest
from keras.src.saving import serialization_lib

from keras_posattn.utils import bidirectional


def test_the_wrapped_layer_lives_as_long_as_its_wrapper():
    layer = keras.layers.LSTM(4, return_sequences=True)
    alive = weakref.ref(layer)
    wrapper = bidirectional(layer, name="bilstm")
    del layer
    gc.collect()
    assert alive() is not None  # its id cannot be handed to another object
    assert wrapper.forward_layer is not alive() and wrapper.backward_layer is not alive()


@pytest.mark.parametrize("cell", [keras.layers.LSTM, keras.layers.GRU])
def test_many_wrappers_inside_a_sharing_scope_get_their_own_layers(cell):
    with serialization_lib.ObjectSharingScope():
        wrappers = [bidirectional(cell(4, return_sequences=True)) for _ in range(300)]
    forward = {id(w.forward_layer) for w in wrappers}
    backward = {id(w.backward_layer) for w in wrappers}
    assert len(forward) == len(backward) == 300 and not forward & backward
    assert all(not w.forward_layer.go_backwards and w.backward_layer.go_backwards
               for w in wrappers)


def test_the_zoo_builds_its_bidirectional_layers_with_it():
    """Every Bidirectional of the families that use one is made by the helper
    (so that every saved model of theirs loads)."""
    from keras_posattn import utils
    from keras_posattn import zoo

    for name, config in (("epn", {"num_blocks": 3, "units": 8, "region_filters": [3, 3, 2],
                                  "num_heads": 2, "embedding_dim": 8}),
                         ("cspan", {"embedding_dim": 8}), ("han", {"embedding_dim": 8}),
                         ("bilstm", {"embedding_dim": 8})):
        model = zoo.build(name, num_classes=2, vocabulary_size=30, **config)
        found = [layer for layer in _all_layers(model)
                 if isinstance(layer, keras.layers.Bidirectional)]
        assert found, name
        assert all(layer in utils._WRAPPED for layer in found), name


def _all_layers(layer):
    for sub in layer._flatten_layers(include_self=False, recursive=True):
        yield sub
