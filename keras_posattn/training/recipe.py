"""Training recipes: the ``recipe`` table of a zoo preset, as one dataclass.

A recipe is how a paper trained its model (optimizer, learning rate, batch,
epochs, weight averaging...). Presets state it in ``zoo/*.toml``; the CLI's
``--epochs``, ``--learning-rate``... override single fields.
"""

import dataclasses

import keras

OPTIMIZERS = {
    "adadelta": keras.optimizers.Adadelta,
    "adam": keras.optimizers.Adam,
    "adamw": keras.optimizers.AdamW,
    "sgd": keras.optimizers.SGD,
    "rmsprop": keras.optimizers.RMSprop,
}


@dataclasses.dataclass
class Recipe:
    """How to train a model.

    Attributes:
        optimizer: one of ``OPTIMIZERS``.
        learning_rate: the optimizer's learning rate.
        batch_size: examples per step.
        epochs: passes over the training data.
        embeddings: pretrained word vectors used when training on files
            (``"glove-6b-50d"``, a file path, or None for none).
        ema: exponential moving average of the weights (e.g. 0.999), None
            (or 0) for none. The dev split is scored on the average, and the
            average is what training keeps: the last epoch's, or with
            ``select_best`` / ``early_stopping`` the best dev epoch's
            (``ema_callback``).
        weight_decay: decoupled weight decay, as Keras applies it (AdamW:
            ``w -= lr * weight_decay * w`` beside the update), None for none.
        coupled_weight_decay: PyTorch's ``Adam(weight_decay=...)`` (and TF1's
            ``wd * tf.nn.l2_loss(w)`` on every variable): ``coupled_weight_decay
            * w`` added to the gradient of *every* trainable weight before the
            optimizer's step - embeddings, biases, norms and attention queries
            included - as a ``(coupled_weight_decay / 2) * sum(w^2)`` loss
            term (``apply_coupled_weight_decay``). On top of a model's own
            kernel L2, if it has one. None for none.
        epsilon: the optimizer's epsilon (None: Keras' default, 1e-7; PyTorch's
            Adam and TF1's use 1e-8).
        max_tokens: the vocabulary the paper keeps (words + PAD + [UNK], as
            ``--max-tokens``), used when the run does not set one; None: every
            training word. 0 reads as None, so a preset's 50d table (or
            ``--max-tokens 0``) can keep every word where its paper recipe
            caps the vocabulary.
        clipnorm: gradient norm clipping, None for none.
        beta_2: the second-moment decay of Adam / AdamW (None: Keras' 0.999;
            HCAN trains with 0.99).
        lr_decay_epochs: epochs (0-based, as PyTorch's MultiStepLR milestones)
            at which the learning rate is multiplied by ``lr_decay_factor``.
        lr_decay_factor: the factor of each step (e.g. 0.1: divided by 10).
        early_stopping: stop when the validation accuracy has not improved for
            this many epochs (None: train every epoch).
        select_best: at the end, keep the weights of the epoch with the best
            validation accuracy (model selection on the dev set), not the last.
        buckets: batch texts of similar length and pad each batch to one of a
            few lengths (see ``TextPreprocessor.dataset``); False pads every
            batch to the preprocessor's ``max_length``.
        jit_compile: XLA compilation of the training step: True, False or
            ``"auto"`` (Keras decides: off on CPU-only machines).
        mixed_bfloat16: train under Keras' ``mixed_bfloat16`` policy
            (bfloat16 matmuls and convolutions, float32 weights, softmaxes
            and logits): True, False, or ``"auto"`` - only where the machine
            computes bfloat16 natively (``keras_posattn.utils.
            native_bfloat16``: a GPU of compute capability >= 8, or a CPU
            with AMX-BF16 or AVX512-BF16) and, on a CPU, a probe step ran
            at least ``utils.BFLOAT16_MIN_SPEEDUP`` times float32's speed
            there (``utils.bfloat16_speedup``, measured once per machine
            and cached), float32 elsewhere. A speed
            setting, kept on a preset only where it was measured faster
            without costing accuracy (BENCHMARKS.md); the trainer's
            ``dtype_policy`` overrides it, and the saved classifier and the
            export are float32 whatever the training policy.
    """

    optimizer: str = "adam"
    learning_rate: float = 1e-3
    batch_size: int = 64
    epochs: int = 10
    embeddings: str = None
    ema: float = None
    weight_decay: float = None
    coupled_weight_decay: float = None
    epsilon: float = None
    max_tokens: int = None
    clipnorm: float = None
    beta_2: float = None
    lr_decay_epochs: list = None
    lr_decay_factor: float = 0.1
    early_stopping: int = None
    select_best: bool = False
    buckets: bool = True
    jit_compile: object = "auto"
    mixed_bfloat16: object = False

    @classmethod
    def from_dict(cls, values, where="recipe"):
        unknown = sorted(set(values) - set(RECIPE_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown recipe key(s) {unknown}; known: {list(RECIPE_KEYS)}.")
        recipe = cls(**values)
        recipe.optimizer = str(recipe.optimizer).lower()
        if recipe.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"{where}: unknown optimizer {recipe.optimizer!r}; known: {sorted(OPTIMIZERS)}."
            )
        if recipe.mixed_bfloat16 not in (True, False, "auto"):
            raise ValueError(f"{where}: mixed_bfloat16 must be true, false or \"auto\", "
                             f"got {recipe.mixed_bfloat16!r}.")
        if recipe.beta_2 is not None and recipe.optimizer not in ("adam", "adamw"):
            raise ValueError(f"{where}: beta_2 applies to adam and adamw, not {recipe.optimizer!r}.")
        if recipe.epsilon is not None and recipe.optimizer == "sgd":
            raise ValueError(f"{where}: epsilon does not apply to sgd.")
        if recipe.max_tokens is not None:
            cap = int(recipe.max_tokens)
            if isinstance(recipe.max_tokens, bool) or (cap != 0 and cap < 3):
                raise ValueError(f"{where}: max_tokens must be >= 3 (PAD, [UNK], a word), "
                                 "or 0 for every word.")
            recipe.max_tokens = cap or None
        return recipe

    def replace(self, **changes):
        """A copy with the non-None ``changes`` applied."""
        changes = {k: v for k, v in changes.items() if v is not None}
        return Recipe.from_dict({**dataclasses.asdict(self), **changes})

    def dtype_policy(self):
        """``("mixed_bfloat16", why)`` when this recipe trains in bfloat16 on
        this machine, else ``(None, why not)``."""
        if self.mixed_bfloat16 is True:
            return "mixed_bfloat16", "the recipe asks for it"
        if self.mixed_bfloat16 == "auto":
            from keras_posattn.utils import native_bfloat16

            why = native_bfloat16()
            if not why:
                return None, "no native bfloat16 here"
            if why.startswith("GPU"):
                return "mixed_bfloat16", f"native bfloat16 here ({why})"
            from keras_posattn.utils import BFLOAT16_MIN_SPEEDUP, bfloat16_speedup

            speedup = bfloat16_speedup()
            if speedup >= BFLOAT16_MIN_SPEEDUP:
                return "mixed_bfloat16", (f"native bfloat16 here ({why}), measured "
                                          f"{speedup:.2f}x float32's speed")
            return None, (f"native bfloat16 here ({why}), but measured {speedup:.2f}x "
                          f"float32's speed, under {BFLOAT16_MIN_SPEEDUP}x: float32")
        return None, "the recipe trains in float32"

    def make_optimizer(self):
        kwargs = {"learning_rate": float(self.learning_rate)}
        if self.ema:
            kwargs.update(use_ema=True, ema_momentum=float(self.ema))
        if self.weight_decay:
            kwargs["weight_decay"] = float(self.weight_decay)
        if self.clipnorm:
            kwargs["clipnorm"] = float(self.clipnorm)
        if self.beta_2 is not None:
            kwargs["beta_2"] = float(self.beta_2)
        if self.epsilon is not None:
            kwargs["epsilon"] = float(self.epsilon)
        return OPTIMIZERS[self.optimizer](**kwargs)

    def apply_coupled_weight_decay(self, model):
        """Give every trainable weight of ``model`` the recipe's coupled weight
        decay, as an L2 term of ``coupled_weight_decay / 2`` added to the
        weight's own regularizer (Keras adds regularizers to the loss at every
        step). A no-op without ``coupled_weight_decay``."""
        if not self.coupled_weight_decay:
            return model
        decay = keras.regularizers.L2(float(self.coupled_weight_decay) / 2)
        for variable in model.trainable_weights:
            own = variable.regularizer
            variable.regularizer = decay if own is None else _SumOfRegularizers(own, decay)
        return model

    def schedule_callback(self):
        """The learning-rate steps as a Keras callback (None without steps)."""
        if not self.lr_decay_epochs:
            return None
        milestones = sorted(int(e) for e in self.lr_decay_epochs)
        base, factor = float(self.learning_rate), float(self.lr_decay_factor)

        def schedule(epoch, lr=None):
            return base * factor ** sum(epoch >= m for m in milestones)

        return keras.callbacks.LearningRateScheduler(schedule)

    def selection_callback(self):
        """Early stopping and/or best-epoch selection on the validation
        accuracy, as a Keras callback (None when the recipe asks for neither)."""
        if not (self.early_stopping or self.select_best):
            return None
        return keras.callbacks.EarlyStopping(
            monitor="val_accuracy", mode="max",
            patience=int(self.early_stopping or self.epochs),
            restore_best_weights=bool(self.select_best or self.early_stopping),
        )

    def ema_callback(self, selection=None):
        """With ``ema``, Keras' ``SwapEMAWeights``: the dev split is scored on
        the weights' moving average, not the last step's weights. With a
        ``selection`` callback (``selection_callback()``) the average also
        stays in the model over the end of each epoch, so the selection keeps
        the average it scored; the raw weights come back at the next epoch's
        start.
        Without this, ``select_best`` kept the raw weights of its best epoch
        and the average was never used. Place it after the checkpoints (they
        save the raw weights and the optimizer, average included, so a run
        resumes) and before the selection. None without ``ema``."""
        if not self.ema:
            return None
        return keras.callbacks.SwapEMAWeights(swap_on_epoch=selection is not None)

    def callbacks(self):
        """The recipe's Keras callbacks, in the order ``fit`` needs them: its
        learning-rate steps, the moving average's swap and its model
        selection (any may be absent)."""
        selection = self.selection_callback()
        return [c for c in (self.schedule_callback(), self.ema_callback(selection), selection)
                if c]

    def as_dict(self):
        return dataclasses.asdict(self)


RECIPE_KEYS = tuple(f.name for f in dataclasses.fields(Recipe))


class _SumOfRegularizers(keras.regularizers.Regularizer):
    """A weight's own regularizer plus the recipe's coupled weight decay."""

    def __init__(self, *parts):
        self.parts = parts

    def __call__(self, x):
        return sum(part(x) for part in self.parts)
