"""The TF Serving contract of an export, pinned without a server.

- In a fresh process that cannot import keras_posattn: the three signatures'
  names, dtypes and shapes, predictions equal to the Keras model's, and
  inputs a user can send (empty, 100k tokens, non-UTF-8 bytes, control
  characters, batches of 1 and 1024) give finite probabilities.
- ``saved_model_cli show --all`` shows the same, with the classify method.
- TF Serving's own protos (tensorflow-serving-api): PredictRequest,
  ClassificationRequest and GetModelMetadataRequest mapped onto the export the
  way TF Serving maps them, and the warm-up file parsed back and replayed.
- REST bodies in the row ("instances") and columnar ("inputs") forms, b64
  bytes, :classify and /metadata.
"""

import base64
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf
from serving_fixtures import LABELS
from serving_fixtures import TEXTS
from tensorflow_serving.apis import classification_pb2
from tensorflow_serving.apis import get_model_metadata_pb2
from tensorflow_serving.apis import input_pb2
from tensorflow_serving.apis import model_pb2
from tensorflow_serving.apis import predict_pb2

from keras_posattn import export
from keras_posattn.serving import ServedModel
from keras_posattn.serving import ServingError

# Inputs a user can send: empty, a 100k-token text, invalid UTF-8, control
# characters, NUL bytes (built in the child process, as bytes).
HOSTILE = (
    '[b"", b"great " * 100_000, b"\\xff\\xfe\\xfa not utf-8 \\xc3", '
    'b"tabs\\tand\\nnewlines\\r\\x00\\x01\\x1b[31m control", b"   "]'
)

_CHILD = r"""
import json, sys
sys.modules["keras_posattn"] = None  # any import of keras_posattn now fails
import numpy as np
import tensorflow as tf
path = sys.argv[1]
loaded = tf.saved_model.load(path)
result = {"signatures": {}}
for name, fn in loaded.signatures.items():
    result["signatures"][name] = {
        "inputs": {k: [v.dtype.name, v.shape.as_list()]
                   for k, v in fn.structured_input_signature[1].items()},
        "outputs": {k: [v.dtype.name, v.shape.as_list()] for k, v in fn.structured_outputs.items()},
    }
serve = loaded.signatures["serving_default"]
texts = json.loads(sys.argv[2])
result["probabilities"] = serve(text=tf.constant(texts))["probabilities"].numpy().tolist()
hostile = %s
for batch in (hostile, hostile[:1], [b"a review"] * 1024):
    out = serve(text=tf.constant(batch))["probabilities"].numpy()
    assert out.shape == (len(batch), %d), out.shape
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-5)
ids = loaded.signatures["token_ids"](token_ids=tf.constant([[2, 3, 0], [0, 0, 0]], tf.int32))
assert np.isfinite(ids["probabilities"].numpy()).all()
assert sys.modules["keras_posattn"] is None
print("RESULT:" + json.dumps(result))
""" % (HOSTILE, len(LABELS))


def test_fresh_process_contract(tiny_classifier, tiny_export, tmp_path):
    texts = list(TEXTS)
    texts = [t for t in TEXTS]
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tiny_export),
         json.dumps(texts)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.split("RESULT:")[-1])
    c = len(LABELS)
    assert got["signatures"] == {
        "serving_default": {
            "inputs": {"text": ["string", [None]]},
            "outputs": {"probabilities": ["float32", [None, c]], "class_id": ["int64", [None]],
                        "label": ["string", [None]]},
        },
        "token_ids": {
            "inputs": {"token_ids": ["int32", [None, None]]},
            "outputs": {"probabilities": ["float32", [None, c]], "class_id": ["int64", [None]],
                        "label": ["string", [None]]},
        },
        "classify": {
            "inputs": {"inputs": ["string", [None]]},
            "outputs": {"classes": ["string", [None, c]], "scores": ["float32", [None, c]]},
        },
    }
    np.testing.assert_allclose(np.asarray(got["probabilities"]),
                               tiny_classifier.predict_probabilities(texts), atol=1e-5)


def _saved_model_cli():
    exe = Path(sys.executable).parent / "saved_model_cli"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]


def test_saved_model_cli_shows_all_signatures(tiny_export):
    proc = subprocess.run(_saved_model_cli() + ["show", "--dir", str(tiny_export), "--all"],
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    blocks = {}
    for block in proc.stdout.split("signature_def['")[1:]:
        blocks[block.split("'", 1)[0]] = block.split("Concrete Functions:", 1)[0]
    assert {"serving_default", "token_ids", "classify"} <= set(blocks)
    assert re.findall(r"inputs\['([^']+)'\]", blocks["serving_default"]) == ["text"]
    assert sorted(re.findall(r"outputs\['([^']+)'\]", blocks["serving_default"])) == sorted(
        export.OUTPUT_KEYS)
    assert "DT_INT32" in blocks["token_ids"] and "(-1, -1)" in blocks["token_ids"]
    assert "Method name is: tensorflow/serving/classify" in blocks["classify"]
    assert "Method name is: tensorflow/serving/predict" in blocks["serving_default"]


@pytest.fixture(scope="module")
def served(tiny_export):
    return ServedModel(tiny_export)


def _predict_request(texts, signature="", output_filter=()):
    request = predict_pb2.PredictRequest(
        model_spec=model_pb2.ModelSpec(name="tiny", signature_name=signature),
        output_filter=list(output_filter),
    )
    request.inputs["text"].CopyFrom(tf.make_tensor_proto(texts, dtype=tf.string))
    return request


def test_predict_request(served, tiny_classifier):
    response = served.predict(_predict_request(TEXTS))
    assert response.model_spec.name == "tiny"
    assert response.model_spec.signature_name == "serving_default"
    assert response.model_spec.version.value == 1
    assert set(response.outputs) == set(export.OUTPUT_KEYS)
    probabilities = tf.make_ndarray(response.outputs["probabilities"])
    np.testing.assert_allclose(probabilities, tiny_classifier.predict_probabilities(TEXTS),
                               atol=1e-5)
    labels = [b.decode() for b in tf.make_ndarray(response.outputs["label"])]
    assert labels == [LABELS[i] for i in probabilities.argmax(-1)]
    filtered = served.predict(_predict_request(TEXTS[:2], output_filter=["label"]))
    assert set(filtered.outputs) == {"label"}


def test_predict_request_errors_match_tf_serving(served):
    with pytest.raises(ServingError, match="not found in signature def"):
        served.predict(_predict_request(["x"], signature="nope"))
    with pytest.raises(ServingError, match="output tensor alias not found"):
        served.predict(_predict_request(["x"], output_filter=["logits"]))
    request = predict_pb2.PredictRequest()
    request.inputs["sentence"].CopyFrom(tf.make_tensor_proto(["x"]))
    with pytest.raises(ServingError, match="input tensor alias not found"):
        served.predict(request)
    request = predict_pb2.PredictRequest()
    request.inputs["text"].CopyFrom(tf.make_tensor_proto([1.5]))
    with pytest.raises(ServingError, match="Expects arg\\[text\\] to be string"):
        served.predict(request)


def test_token_ids_request_matches_the_string_signature(served, tiny_classifier):
    ids = tiny_classifier.preprocessor(TEXTS).numpy()
    request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(signature_name="token_ids"))
    request.inputs["token_ids"].CopyFrom(tf.make_tensor_proto(ids, dtype=tf.int32))
    by_ids = tf.make_ndarray(served.predict(request).outputs["probabilities"])
    by_text = tf.make_ndarray(served.predict(_predict_request(TEXTS)).outputs["probabilities"])
    np.testing.assert_allclose(by_ids, by_text, atol=1e-6)


def test_classification_request(served, tiny_classifier):
    examples = []
    for text in TEXTS:
        example = tf.train.Example()
        example.features.feature["text"].bytes_list.value.append(text.encode())
        examples.append(example)
    request = classification_pb2.ClassificationRequest(
        model_spec=model_pb2.ModelSpec(name="tiny", signature_name="classify"),
        input=input_pb2.Input(example_list=input_pb2.ExampleList(examples=examples)),
    )
    response = served.classify(request)
    expected = tiny_classifier.predict_probabilities(TEXTS)
    assert len(response.result.classifications) == len(TEXTS)
    for row, probs in zip(response.result.classifications, expected):
        assert [c.label for c in row.classes] == LABELS
        np.testing.assert_allclose([c.score for c in row.classes], probs, atol=1e-5)
    # Like TF Serving, the Classify API refuses a predict signature.
    request.model_spec.signature_name = ""
    with pytest.raises(ServingError, match="tensorflow/serving/classify"):
        served.classify(request)


def test_model_metadata_request(served):
    request = get_model_metadata_pb2.GetModelMetadataRequest(
        model_spec=model_pb2.ModelSpec(name="tiny"), metadata_field=["signature_def"])
    response = served.metadata(request)
    signature_map = get_model_metadata_pb2.SignatureDefMap()
    assert response.metadata["signature_def"].Unpack(signature_map)
    defs = signature_map.signature_def
    assert set(defs) >= {"serving_default", "token_ids", "classify"}
    assert defs["classify"].method_name == "tensorflow/serving/classify"
    assert defs["serving_default"].inputs["text"].dtype == tf.string.as_datatype_enum


def test_warmup_requests_parse_back_and_replay(served):
    logs = served.warmup_requests()
    sizes = [tf.make_ndarray(log.predict_log.request.inputs["text"]).shape[0] for log in logs]
    assert sizes == list(export.WARMUP_BATCH_SIZES)
    assert all(log.predict_log.request.model_spec.signature_name == "serving_default" for log in logs)
    for response, size in zip(served.replay_warmup(), sizes):
        probabilities = tf.make_ndarray(response.outputs["probabilities"])
        assert probabilities.shape == (size, len(LABELS)) and np.isfinite(probabilities).all()


def test_rest_row_and_columnar_forms(served, tiny_classifier):
    expected = tiny_classifier.predict_probabilities(TEXTS)
    rows = served.rest_predict(json.dumps({"instances": TEXTS}))["predictions"]
    assert [sorted(r) for r in rows] == [sorted(export.OUTPUT_KEYS)] * len(TEXTS)
    np.testing.assert_allclose([r["probabilities"] for r in rows], expected, atol=1e-5)
    assert [r["label"] for r in rows] == [LABELS[i] for i in expected.argmax(-1)]
    keyed = served.rest_predict({"instances": [{"text": t} for t in TEXTS]})["predictions"]
    assert keyed == rows
    columnar = served.rest_predict({"inputs": {"text": TEXTS}})["outputs"]
    np.testing.assert_allclose(columnar["probabilities"], expected, atol=1e-5)
    assert served.rest_predict({"inputs": TEXTS})["outputs"] == columnar
    raw = b"\xff\xfe not utf-8"
    b64 = served.rest_predict({"instances": [{"b64": base64.b64encode(raw).decode()}]})
    assert np.isfinite(b64["predictions"][0]["probabilities"]).all()
    ids = tiny_classifier.preprocessor(TEXTS[:2]).numpy().tolist()
    by_ids = served.rest_predict({"signature_name": "token_ids", "instances": ids})["predictions"]
    np.testing.assert_allclose([r["probabilities"] for r in by_ids], expected[:2], atol=1e-5)
    with pytest.raises(ServingError, match="exactly one of"):
        served.rest_predict({"instances": TEXTS, "inputs": TEXTS})


def test_rest_classify_and_metadata(served, tiny_classifier):
    answer = served.rest_classify({"signature_name": "classify",
                                   "examples": [{"text": t} for t in TEXTS[:2]]})
    expected = tiny_classifier.predict_probabilities(TEXTS[:2])
    assert [[label for label, _ in row] for row in answer["results"]] == [LABELS, LABELS]
    np.testing.assert_allclose([[s for _, s in row] for row in answer["results"]], expected,
                               atol=1e-5)
    metadata = served.rest_metadata()
    assert metadata["model_spec"] == {"name": "tiny", "signature_name": "", "version": "1"}
    signatures = metadata["metadata"]["signature_def"]["signatureDef"]
    assert signatures["classify"]["methodName"] == "tensorflow/serving/classify"
    assert set(signatures["serving_default"]["inputs"]) == {"text"}
