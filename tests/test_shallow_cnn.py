"""ShallowCNN (EPN's baseline): the shared model checks and its parameter count."""

from model_checks import run_model_test

from keras_posattn import zoo
from keras_posattn.utils import count_parameters


def test_shared_model_checks():
    run_model_test("shallow_cnn", {"embedding_dim": 16, "filters": 8})


def test_parameter_count_at_paper_settings():
    assert count_parameters(zoo.build("shallow_cnn")) == 3 * 300 * 500 + 500 + 500 * 5 + 5 == 453_005
