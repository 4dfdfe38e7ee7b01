"""What the trainer writes to TensorBoard's GRAPHS tab (``training/tensorboard.py``)."""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_posattn import zoo
from keras_posattn.training.tensorboard import KERAS_GRAPH_PLUGIN
from keras_posattn.training.tensorboard import ModelGraph


def _summaries(directory):
    """(tag, plugin name, plugin content, tensor) of every summary value, and
    the number of op graphs, in the event files below ``directory``."""
    values, graphs = [], 0
    for root, _, files in os.walk(directory):
        for name in files:
            if "tfevents" not in name:
                continue
            for event in tf.compat.v1.train.summary_iterator(os.path.join(root, name)):
                graphs += bool(event.graph_def)
                for v in event.summary.value:
                    values.append((v.tag, v.metadata.plugin_data.plugin_name,
                                   v.metadata.plugin_data.content, tf.make_ndarray(v.tensor)))
    return values, graphs


def test_model_graph_writes_the_op_graph_and_the_keras_conceptual_graph(tmp_path):
    """The conceptual graph is the model's JSON config under the tag "keras",
    for the plugin TensorBoard's GRAPHS tab reads it with (written with public
    TensorFlow APIs, not Keras' private ``keras_model_summary``)."""
    model = zoo.build("mpsan", num_classes=2, vocabulary_size=30, embedding_dim=8, max_length=6)
    callback = ModelGraph(tmp_path, np.array([[2, 3, 4, 0]], "int32"))
    callback.set_model(model)
    callback.on_train_begin()
    values, graphs = _summaries(tmp_path / "train")
    assert graphs == 1
    [(tag, plugin, content, tensor)] = values
    assert (tag, plugin, content) == ("keras", KERAS_GRAPH_PLUGIN, b"1")
    written = json.loads(tensor.item().decode("utf-8"))
    assert written == json.loads(model.to_json())
    assert written["class_name"] == "MPSAN"


def test_a_model_without_a_json_config_is_skipped_with_a_warning(tmp_path):
    class NoConfig(keras.Model):
        def call(self, x):
            return x

        def get_config(self):
            raise NotImplementedError("no config here")

    model = NoConfig()
    model(np.zeros((1, 3), "int32"))
    callback = ModelGraph(tmp_path, np.zeros((1, 3), "int32"))
    callback.set_model(model)
    with pytest.warns(UserWarning, match="No conceptual graph.*no config here"):
        callback.on_train_begin()
    values, graphs = _summaries(tmp_path / "train")
    assert values == [] and graphs == 1
