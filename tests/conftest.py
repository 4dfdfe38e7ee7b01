"""Shared pytest setup: quiet TensorFlow, and a dtype-policy fixture."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def dtype_policy(request):
    """Set the global dtype policy named by indirect parametrisation.

    Use with ``@pytest.mark.parametrize("dtype_policy", [...], indirect=True)``.
    The policy is always put back to ``"float32"`` afterwards, even on failure.
    """
    name = getattr(request, "param", "float32")
    keras.mixed_precision.set_global_policy(name)
    try:
        yield name
    finally:
        keras.mixed_precision.set_global_policy("float32")


@pytest.fixture(scope="session")
def tiny_classifier():
    """A small TextClassifier with fixed, well-separated weights."""
    from serving_fixtures import make_classifier

    return make_classifier()


@pytest.fixture(scope="session")
def tiny_export(tiny_classifier, tmp_path_factory):
    """``tiny_classifier`` exported as <tmp>/tiny/1."""
    from keras_posattn import export

    return export.export_saved_model(tiny_classifier, "tiny",
                                     base_dir=tmp_path_factory.mktemp("repo"))
