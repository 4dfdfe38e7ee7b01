"""What the trainer and the tuner write to TensorBoard besides scalars and images.

- ``ModelGraph``: the model's graph. Keras 3's ``TensorBoard(write_graph=True)``
  writes nothing for these models (its train function is not a
  ``tf.function``, and its conceptual graph is only written for plain
  ``Functional`` models), so this callback traces the model on a sample batch
  and writes the op graph (GRAPHS tab, "Default" tag) and the Keras conceptual
  graph (GRAPHS tab, "keras" tag) into the training run's folder.
- ``write_projector``: the word embedding for TensorBoard's PROJECTOR tab, with
  the vocabulary as metadata (``--projector``).
"""

import warnings
from pathlib import Path

import keras
import tensorflow as tf


class ModelGraph(keras.callbacks.Callback):
    """Write the model's op graph and conceptual graph once, at the start of
    training, into ``<log_dir>/train``.

    Args:
        log_dir: the run's TensorBoard folder (the ``TensorBoard`` callback's).
        sample_inputs: a batch of model inputs (e.g. token ids).
    """

    def __init__(self, log_dir, sample_inputs):
        super().__init__()
        self.log_dir = str(log_dir)
        self.sample_inputs = sample_inputs

    def on_train_begin(self, logs=None):
        model = self.model
        sample = tf.convert_to_tensor(self.sample_inputs)
        spec = tf.TensorSpec([None] * len(sample.shape), sample.dtype, name="inputs")
        graph = tf.function(lambda x: model(x, training=False)).get_concrete_function(spec).graph
        writer = tf.summary.create_file_writer(str(Path(self.log_dir) / "train"))
        with writer.as_default():
            tf.summary.graph(graph)
            write_keras_model("keras", model, step=0)
        writer.flush()
        writer.close()


#: The TensorBoard plugin that draws a Keras model's conceptual graph from its
#: JSON config (what Keras' own ``TensorBoard(write_graph=True)`` writes).
KERAS_GRAPH_PLUGIN = "graph_keras_model"


def write_keras_model(name, model, step):
    """Write ``model.to_json()`` as a summary the GRAPHS tab draws as the
    model's conceptual graph (under the tag ``name``), with public TensorFlow
    APIs only. Returns False, writing nothing, if the model has no JSON config
    (an error in a model's config must not stop training)."""
    try:
        config = model.to_json()
    except Exception as error:  # noqa: BLE001 - any serialisation failure
        warnings.warn(f"No conceptual graph for {model.name}: its config is not JSON ({error}).")
        return False
    metadata = tf.compat.v1.SummaryMetadata()
    metadata.plugin_data.plugin_name = KERAS_GRAPH_PLUGIN
    metadata.plugin_data.content = b"1"  # the plugin's data version
    return tf.summary.write(tag=name, tensor=config, step=step, metadata=metadata)


def write_projector(log_dir, model, vocabulary):
    """Write the model's word embedding (``model.embedding``, the contract's)
    for TensorBoard's projector: a checkpoint, ``metadata.tsv`` (one word per
    row; the padding row shows as ``<pad>``) and ``projector_config.pbtxt``."""
    from tensorboard.plugins import projector

    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    with open(log_dir / "metadata.tsv", "w", encoding="utf-8") as f:
        for word in vocabulary:
            f.write((word or "<pad>").replace("\t", " ").replace("\n", " ") + "\n")
    table = tf.Variable(keras.ops.convert_to_numpy(model.embedding.table()))
    tf.train.Checkpoint(embedding=table).save(str(log_dir / "embedding.ckpt"))
    config = projector.ProjectorConfig()
    embedding = config.embeddings.add()
    embedding.tensor_name = "embedding/.ATTRIBUTES/VARIABLE_VALUE"
    embedding.metadata_path = "metadata.tsv"
    projector.visualize_embeddings(str(log_dir), config)
