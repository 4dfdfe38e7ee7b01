"""What TensorFlow Serving does with an export, without a server.

``ServedModel(path)`` loads an exported version folder and answers the
requests TF Serving answers, the way TF Serving maps them onto the
SavedModel's signatures: gRPC ``PredictRequest`` / ``ClassificationRequest`` /
``GetModelMetadataRequest`` protos from ``tensorflow-serving-api``, and the
REST bodies of ``:predict`` (``{"instances": ...}`` row format and
``{"inputs": ...}`` columnar format, ``{"b64": ...}`` for bytes),
``:classify`` (``{"examples": [...]}``) and ``/metadata``. It also replays the
export's warm-up file. Use it to check an export before deploying it; the
project's tests use it to pin the serving contract (no TF Serving binary is
needed, none is involved).

The mapping follows TF Serving's documented behaviour: inputs are matched to
the signature by key (every signature input is required, an unknown key is
an error), ``output_filter`` keeps the named outputs, a signature with one
input takes REST instances as its values, a single-output signature answers
with the bare value.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import tensorflow as tf

from keras_posattn.export import CLASSIFY_METHOD
from keras_posattn.export import SERVING_SIGNATURE as DEFAULT_SIGNATURE
from keras_posattn.export import ExportedModel

__all__ = ["ServedModel", "ServingError"]


class ServingError(ValueError):
    """A request TF Serving would refuse (INVALID_ARGUMENT / FAILED_PRECONDITION)."""


class ServedModel:
    """An exported version folder, answering TF Serving's requests.

    Args:
        path: ``<base>/<name>/<version>``.
        name: the model name (default: the folder above the version).
    """

    def __init__(self, path, name=None):
        try:
            import tensorflow_serving.apis  # noqa: F401
        except ImportError:
            raise ImportError("ServedModel answers TF Serving's request protos, which need "
                              "tensorflow-serving-api: pip install 'keras-posattn[serving]'"
                              ) from None
        self.path = Path(path)
        self.version = int(self.path.name)
        self.name = name or self.path.parent.name
        self.export = ExportedModel(self.path)
        self.signature_defs = self.export.signature_defs

    # --- gRPC protos ---------------------------------------------------------

    def _model_spec(self, request_spec, signature_name):
        from tensorflow_serving.apis import model_pb2

        spec = model_pb2.ModelSpec(name=self.name, signature_name=signature_name)
        spec.version.value = self.version
        if request_spec is not None and request_spec.name and request_spec.name != self.name:
            raise ServingError(f"Servable not found for request: Latest({request_spec.name})")
        return spec

    def _signature(self, name, method=None):
        name = name or DEFAULT_SIGNATURE
        if name not in self.signature_defs:
            raise ServingError(
                f"Serving signature name: \"{name}\" not found in signature def; "
                f"known: {sorted(self.signature_defs)}"
            )
        signature = self.signature_defs[name]
        if method is not None and signature.method_name != method:
            raise ServingError(
                f"Expected {method} signature method_name, got {signature.method_name} "
                f"for signature {name!r}"
            )
        return name, signature

    def _run(self, name, signature, inputs, output_filter=()):
        missing = set(signature.inputs) - set(inputs)
        unknown = set(inputs) - set(signature.inputs)
        if unknown:
            raise ServingError(f"input tensor alias not found in signature: {sorted(unknown)}")
        if missing:
            raise ServingError(f"Missing input tensor alias: {sorted(missing)}")
        feed = {}
        for key, value in inputs.items():
            expected = tf.dtypes.as_dtype(signature.inputs[key].dtype)
            tensor = tf.convert_to_tensor(value)
            if tensor.dtype != expected:
                if expected.is_integer and tensor.dtype.is_integer:
                    tensor = tf.cast(tensor, expected)
                else:
                    raise ServingError(
                        f"Expects arg[{key}] to be {expected.name} but {tensor.dtype.name} is provided"
                    )
            feed[key] = tensor
        outputs = self.export.signature(name)(**feed)
        for key in output_filter:
            if key not in outputs:
                raise ServingError(f"output tensor alias not found in signature: {key}")
        if output_filter:
            outputs = {k: v for k, v in outputs.items() if k in set(output_filter)}
        return outputs

    def predict(self, request):
        """A ``PredictRequest`` -> ``PredictResponse`` (TF Serving's Predict API)."""
        from tensorflow_serving.apis import predict_pb2

        name, signature = self._signature(request.model_spec.signature_name)
        inputs = {key: tf.make_ndarray(proto) for key, proto in request.inputs.items()}
        outputs = self._run(name, signature, inputs, list(request.output_filter))
        response = predict_pb2.PredictResponse(model_spec=self._model_spec(request.model_spec, name))
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
        return response

    def classify(self, request):
        """A ``ClassificationRequest`` -> ``ClassificationResponse`` (Classify API)."""
        from tensorflow_serving.apis import classification_pb2

        # An empty signature name means serving_default, as in TF Serving
        # (which then refuses it unless it is a classify signature).
        name, signature = self._signature(request.model_spec.signature_name or None,
                                          method=CLASSIFY_METHOD)
        examples = _examples_of(request.input)
        serialized = np.array([e.SerializeToString() for e in examples], dtype=object)
        (input_key,) = signature.inputs
        outputs = self._run(name, signature, {input_key: serialized})
        classes = outputs["classes"].numpy() if "classes" in outputs else None
        scores = outputs["scores"].numpy() if "scores" in outputs else None
        response = classification_pb2.ClassificationResponse(
            model_spec=self._model_spec(request.model_spec, name)
        )
        for i in range(len(examples)):
            row = response.result.classifications.add()
            width = (classes if classes is not None else scores).shape[1]
            for j in range(width):
                entry = row.classes.add()
                if classes is not None:
                    entry.label = classes[i, j].decode("utf-8")
                if scores is not None:
                    entry.score = float(scores[i, j])
        return response

    def metadata(self, request=None):
        """A ``GetModelMetadataRequest`` -> ``GetModelMetadataResponse``: the
        signature definitions, packed in a ``SignatureDefMap``."""
        from tensorflow_serving.apis import get_model_metadata_pb2

        fields = list(request.metadata_field) if request is not None else ["signature_def"]
        if fields != ["signature_def"]:
            raise ServingError(f"Metadata field(s) {fields} not supported; only signature_def")
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        for key, value in self.signature_defs.items():
            signature_map.signature_def[key].CopyFrom(value)
        response = get_model_metadata_pb2.GetModelMetadataResponse(
            model_spec=self._model_spec(request.model_spec if request else None, "")
        )
        response.metadata["signature_def"].Pack(signature_map)
        return response

    # --- REST ----------------------------------------------------------------

    def rest_predict(self, body):
        """The JSON body of ``POST /v1/models/<name>:predict`` -> the JSON answer."""
        body = json.loads(body) if isinstance(body, (str, bytes)) else body
        name, signature = self._signature(body.get("signature_name"))
        keys = list(signature.inputs)
        if ("instances" in body) == ("inputs" in body):
            raise ServingError("JSON body must have exactly one of 'instances' or 'inputs'")
        if "instances" in body:
            instances = body["instances"]
            if not isinstance(instances, list):
                raise ServingError("'instances' must be a list")
            if len(keys) == 1 and not (instances and isinstance(instances[0], dict)
                                       and set(instances[0]) == set(keys)):
                columns = {keys[0]: [_decode_json(v) for v in instances]}
            else:
                columns = {k: [_decode_json(inst[k]) for inst in instances] for k in keys}
            outputs = self._run(name, signature, _to_arrays(columns, signature))
            rows = _rows(outputs)
            return {"predictions": rows}
        inputs = body["inputs"]
        if not isinstance(inputs, dict) or (len(keys) == 1 and keys[0] not in inputs):
            inputs = {keys[0]: inputs}
        columns = {k: _decode_json(v) for k, v in inputs.items()}
        outputs = self._run(name, signature, _to_arrays(columns, signature))
        result = {k: _to_json(v.numpy()) for k, v in outputs.items()}
        return {"outputs": next(iter(result.values())) if len(result) == 1 else result}

    def rest_classify(self, body):
        """The JSON body of ``POST /v1/models/<name>:classify`` -> the JSON answer:
        ``{"results": [[[label, score], ...], ...]}``."""
        from tensorflow_serving.apis import classification_pb2
        from tensorflow_serving.apis import input_pb2

        body = json.loads(body) if isinstance(body, (str, bytes)) else body
        context = body.get("context", {})
        examples = []
        for raw in body.get("examples", []):
            example = tf.train.Example()
            for key, value in {**context, **raw}.items():
                _set_feature(example, key, value)
            examples.append(example)
        request = classification_pb2.ClassificationRequest(
            input=input_pb2.Input(example_list=input_pb2.ExampleList(examples=examples))
        )
        request.model_spec.signature_name = body.get("signature_name", "classify")
        response = self.classify(request)
        return {"results": [[[c.label, c.score] for c in row.classes]
                            for row in response.result.classifications]}

    def rest_metadata(self):
        """The JSON answer of ``GET /v1/models/<name>/metadata``."""
        from google.protobuf import json_format
        from tensorflow_serving.apis import get_model_metadata_pb2

        response = self.metadata()
        signature_map = get_model_metadata_pb2.SignatureDefMap()
        response.metadata["signature_def"].Unpack(signature_map)
        return {
            "model_spec": {"name": self.name, "signature_name": "",
                           "version": str(self.version)},
            "metadata": {"signature_def": json_format.MessageToDict(signature_map)},
        }

    # --- warm-up -------------------------------------------------------------

    def warmup_requests(self):
        """The ``PredictionLog`` records of ``assets.extra/tf_serving_warmup_requests``."""
        from tensorflow_serving.apis import prediction_log_pb2

        path = self.path / "assets.extra" / "tf_serving_warmup_requests"
        logs = []
        for record in tf.data.TFRecordDataset(str(path)):
            log = prediction_log_pb2.PredictionLog()
            log.ParseFromString(record.numpy())
            logs.append(log)
        return logs

    def replay_warmup(self):
        """Answer every warm-up request, as TF Serving does at load time."""
        return [self.predict(log.predict_log.request) for log in self.warmup_requests()]


def _examples_of(input_proto):
    kind = input_proto.WhichOneof("kind")
    if kind == "example_list":
        return list(input_proto.example_list.examples)
    if kind == "example_list_with_context":
        context = input_proto.example_list_with_context.context
        merged = []
        for example in input_proto.example_list_with_context.examples:
            combined = tf.train.Example()
            combined.CopyFrom(context)
            combined.MergeFrom(example)
            merged.append(combined)
        return merged
    raise ServingError("Input is empty")


def _set_feature(example, key, value):
    values = value if isinstance(value, list) else [value]
    if all(isinstance(v, dict) and "b64" in v for v in values):
        example.features.feature[key].bytes_list.value.extend(base64.b64decode(v["b64"]) for v in values)
    elif all(isinstance(v, str) for v in values):
        example.features.feature[key].bytes_list.value.extend(v.encode("utf-8") for v in values)
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        example.features.feature[key].int64_list.value.extend(values)
    else:
        example.features.feature[key].float_list.value.extend(float(v) for v in values)


def _decode_json(value):
    """REST values: {"b64": ...} objects are bytes, lists recurse."""
    if isinstance(value, dict) and set(value) == {"b64"}:
        return base64.b64decode(value["b64"])
    if isinstance(value, list):
        return [_decode_json(v) for v in value]
    return value


def _to_arrays(columns, signature):
    arrays = {}
    for key, value in columns.items():
        dtype = tf.dtypes.as_dtype(signature.inputs[key].dtype)
        if dtype == tf.string:
            arrays[key] = tf.constant(np.array(value, dtype=object), dtype=tf.string)
        else:
            arrays[key] = tf.constant(value, dtype=dtype)
    return arrays


def _to_json(array):
    if array.dtype == object:
        return _bytes_to_json(array.tolist())
    return array.tolist()


def _bytes_to_json(value):
    if isinstance(value, list):
        return [_bytes_to_json(v) for v in value]
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"b64": base64.b64encode(value).decode("ascii")}
    return value


def _rows(outputs):
    arrays = {k: _to_json(v.numpy()) for k, v in outputs.items()}
    count = len(next(iter(arrays.values())))
    if len(arrays) == 1:
        return next(iter(arrays.values()))
    return [{k: v[i] for k, v in arrays.items()} for i in range(count)]
