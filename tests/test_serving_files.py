"""``keras_posattn.serving_files`` writes what the ``tensorflow_serving``
protos write, byte for byte, so the export can do without
``tensorflow-serving-api``."""

import pytest
import tensorflow as tf
from google.protobuf import text_format
from tensorflow_serving.apis import model_pb2
from tensorflow_serving.apis import predict_pb2
from tensorflow_serving.apis import prediction_log_pb2
from tensorflow_serving.config import model_server_config_pb2

from keras_posattn.serving_files import model_server_config
from keras_posattn.serving_files import predict_log

NAMES = ["mpsan", "spe_cnn", 'we"ird\\name', "caf\u00e9 \u4e2d", "tab\there"]


def reference_config(models):
    config = model_server_config_pb2.ModelServerConfig()
    for name, base_path, num_versions in models:
        entry = config.model_config_list.config.add()
        entry.name = name
        entry.base_path = base_path
        entry.model_platform = "tensorflow"
        entry.model_version_policy.latest.num_versions = num_versions
    return text_format.MessageToString(config, as_utf8=True)


@pytest.mark.parametrize("count", [0, 1, len(NAMES)])
def test_model_server_config_is_what_text_format_writes(count):
    models = [(name, f"/models/{name}", 1 + i) for i, name in enumerate(NAMES[:count])]
    written = model_server_config(models)
    assert written == reference_config(models)
    parsed = text_format.Parse(written, model_server_config_pb2.ModelServerConfig())
    assert [c.name for c in parsed.model_config_list.config] == NAMES[:count]


def test_control_characters_are_escaped_and_parse_back():
    """Protobuf 4 writes them raw with as_utf8=True, protobuf 7 escapes them:
    both parse back to the same name, as the escaped form does."""
    name = "bell\x07\x7f\n"
    written = model_server_config([(name, "/models/x", 2)])
    assert '"bell\\007\\177\\n"' in written
    parsed = text_format.Parse(written, model_server_config_pb2.ModelServerConfig())
    assert parsed.model_config_list.config[0].name == name


@pytest.mark.parametrize("batch", [1, 8, 64, 300])
@pytest.mark.parametrize("name", ["mpsan", "caf\u00e9"])
def test_predict_log_is_what_the_protos_serialize(batch, name):
    texts = [f"text number {i} \u00e9" for i in range(batch)]
    tensor = tf.make_tensor_proto(texts, dtype=tf.string)
    request = predict_pb2.PredictRequest(
        model_spec=model_pb2.ModelSpec(name=name, signature_name="serving_default"))
    request.inputs["text"].CopyFrom(tensor)
    log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
    written = predict_log(name, "serving_default", {"text": tensor})
    assert written == log.SerializeToString()
    parsed = prediction_log_pb2.PredictionLog.FromString(written)
    assert parsed.predict_log.request.model_spec.name == name
    assert list(tf.make_ndarray(parsed.predict_log.request.inputs["text"])) == [
        t.encode("utf-8") for t in texts]
