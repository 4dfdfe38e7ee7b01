"""The two TF Serving files an export writes, without ``tensorflow-serving-api``.

``tensorflow-serving-api`` pins TensorFlow to its own minor release, so a
dependency on it makes ``pip install keras-posattn`` upgrade an older
TensorFlow. What the export needs from it is two small messages, written here
with TensorFlow's own ``TensorProto`` and nothing else; the tests check them
against the ``tensorflow_serving`` protos byte for byte.

- ``model_server_config``: ``models.config``, a ``ModelServerConfig`` in
  protobuf text format (what ``text_format.MessageToString(config,
  as_utf8=True)`` writes).
- ``predict_log``: one record of ``assets.extra/tf_serving_warmup_requests``,
  a serialized ``PredictionLog`` holding a ``PredictLog`` whose
  ``PredictRequest`` names the model and signature.
"""

__all__ = ["model_server_config", "predict_log"]


def model_server_config(models):
    """``models.config`` text: one ``config`` per ``(name, base_path,
    num_versions)`` in ``models``, platform "tensorflow", serving each model's
    ``num_versions`` latest versions."""
    lines = ["model_config_list {"]
    for name, base_path, num_versions in models:
        lines += [
            "  config {",
            f'    name: "{_text_escape(name)}"',
            f'    base_path: "{_text_escape(base_path)}"',
            '    model_platform: "tensorflow"',
            "    model_version_policy {",
            "      latest {",
            f"        num_versions: {int(num_versions)}",
            "      }",
            "    }",
            "  }",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n" if models else ""


def predict_log(model_name, signature_name, inputs):
    """A serialized ``tensorflow.serving.PredictionLog`` of a predict request.

    Args:
        model_name: ``ModelSpec.name``.
        signature_name: ``ModelSpec.signature_name``.
        inputs: ``{input key: tf.TensorProto}`` (e.g. from
            ``tf.make_tensor_proto``), the request's inputs.

    Returns:
        bytes, what ``PredictionLog.SerializeToString()`` gives.
    """
    spec = _field(1, model_name.encode("utf-8")) + _field(3, signature_name.encode("utf-8"))
    request = _field(1, spec) + b"".join(
        _field(2, _field(1, key.encode("utf-8")) + _field(2, tensor.SerializeToString()))
        for key, tensor in sorted(inputs.items())
    )
    return _field(6, _field(1, request))  # PredictionLog.predict_log.request


def _field(number, payload):
    """A length-delimited protobuf field (strings, bytes, messages); empty
    values are left out, as proto3 serialisation does."""
    if not payload:
        return b""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value):
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_ESCAPES = {ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t", ord('"'): '\\"',
            ord("'"): "\\'", ord("\\"): "\\\\"}


def _text_escape(value):
    """A string as protobuf's text format writes it with ``as_utf8=True``
    (C escapes for quotes, backslashes and control characters; other
    characters as they are)."""
    return "".join(
        _ESCAPES.get(ord(c), f"\\{ord(c):03o}" if ord(c) < 32 or ord(c) == 127 else c)
        for c in value
    )
