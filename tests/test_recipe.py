"""Recipes: the mixed_bfloat16 speed setting and the hardware check behind it."""

import pytest

from keras_posattn import utils
from keras_posattn.training.recipe import Recipe


def test_mixed_bfloat16_values(monkeypatch):
    assert Recipe.from_dict({}).dtype_policy()[0] is None  # float32 unless asked
    assert Recipe.from_dict({"mixed_bfloat16": True}).dtype_policy()[0] == "mixed_bfloat16"
    monkeypatch.setattr(utils, "native_bfloat16", lambda: "CPU flag avx512_bf16")
    policy, why = Recipe.from_dict({"mixed_bfloat16": "auto"}).dtype_policy()
    assert policy == "mixed_bfloat16" and "avx512_bf16" in why
    monkeypatch.setattr(utils, "native_bfloat16", lambda: None)
    assert Recipe.from_dict({"mixed_bfloat16": "auto"}).dtype_policy()[0] is None
    with pytest.raises(ValueError, match="mixed_bfloat16 must be"):
        Recipe.from_dict({"mixed_bfloat16": "yes"})


def test_native_bfloat16_reads_the_cpu_flags(tmp_path, monkeypatch):
    import tensorflow as tf

    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    with_flag = tmp_path / "cpuinfo_bf16"
    with_flag.write_text("flags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n")
    without = tmp_path / "cpuinfo"
    without.write_text("flags\t\t: fpu avx2 avx512f avx512_vnni\n")
    assert utils.native_bfloat16(str(with_flag)) == "CPU flag avx512_bf16"
    assert utils.native_bfloat16(str(without)) is None
    assert utils.native_bfloat16(str(tmp_path / "missing")) is None


def test_a_presets_50d_recipe_opts_into_bfloat16_only_where_native(monkeypatch):
    """MPSAN's and DPCNN's 50d recipes say mixed_bfloat16 = "auto" (measured
    faster at equal TREC accuracy); the paper recipe stays float32, and so does
    the 50d one on a machine without native bfloat16."""
    from keras_posattn.training.trainer import resolve_settings

    monkeypatch.setattr(utils, "native_bfloat16", lambda: "CPU flag avx512_bf16")
    fifty = resolve_settings("mpsan", demo=False, recipe_name="50d").recipe
    assert fifty.mixed_bfloat16 == "auto"
    assert fifty.dtype_policy()[0] == "mixed_bfloat16"
    assert resolve_settings("mpsan", demo=False, recipe_name="paper").recipe.dtype_policy()[0] is None
    # mpsan_released lost accuracy in bfloat16 and opts out of what it inherits.
    released = resolve_settings("mpsan_released", demo=False, recipe_name="50d").recipe
    assert released.dtype_policy()[0] is None and released.ema == 0.999
    # DPCNN likewise; DPCNN+ keeps the rest of DPCNN's 50d recipe but not bfloat16.
    assert resolve_settings("dpcnn", demo=False, recipe_name="50d").recipe.dtype_policy()[0] == (
        "mixed_bfloat16")
    plus = resolve_settings("dpcnn_plus", demo=False, recipe_name="50d").recipe
    assert plus.dtype_policy()[0] is None and plus.select_best and plus.epochs == 15
    monkeypatch.setattr(utils, "native_bfloat16", lambda: None)
    assert fifty.dtype_policy()[0] is None


def test_kim_non_static_opts_into_bfloat16_and_static_does_not(monkeypatch):
    """Kim's CNN has one recipe; CNN-non-static kept its TREC accuracy in
    bfloat16 and says "auto" (its demo stays float32), CNN-static lost 0.4
    points and stays float32."""
    from keras_posattn.training.trainer import resolve_settings

    monkeypatch.setattr(utils, "native_bfloat16", lambda: "CPU flag avx512_bf16")
    non_static = resolve_settings("kim_cnn_nonstatic", demo=False, recipe_name="paper").recipe
    assert non_static.dtype_policy()[0] == "mixed_bfloat16"
    assert non_static.optimizer == "adadelta" and non_static.epochs == 25  # Kim's, unchanged
    assert resolve_settings("kim_cnn_nonstatic", demo=True,
                            recipe_name="paper").recipe.dtype_policy()[0] is None
    assert resolve_settings("kim_cnn_static", demo=False,
                            recipe_name="paper").recipe.dtype_policy()[0] is None


def test_spe_cnn_50d_recipe_opts_into_bfloat16_and_its_paper_recipe_does_not(monkeypatch):
    from keras_posattn.training.trainer import resolve_settings

    monkeypatch.setattr(utils, "native_bfloat16", lambda: "CPU flag avx512_bf16")
    fifty = resolve_settings("spe_cnn", demo=False, recipe_name="50d").recipe
    assert fifty.dtype_policy()[0] == "mixed_bfloat16" and fifty.learning_rate == 1e-3
    assert resolve_settings("spe_cnn", demo=False,
                            recipe_name="paper").recipe.dtype_policy()[0] is None
    assert resolve_settings("spe_cnn", demo=True,
                            recipe_name="50d").recipe.dtype_policy()[0] is None
