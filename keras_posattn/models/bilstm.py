"""Bi-LSTM: the recurrent reference model, from stock Keras layers.

The "standard Bi-LSTM baseline" of CSPAN (Yu et al., section 4 and Table 3:
AG News 89.36), the recurrent row MPSAN compares with (Tables 1 and 6, from
other papers). It is here as a reference point built only from stock Keras
recurrent layers, beside the zoo's attention models:

1. Word embedding (GloVe 6B 300d in CSPAN; pretrained rows frozen, OOV rows
   trained by default, as the other sentence models of the zoo).
2. Dropout on the embeddings.
3. ``keras.layers.Bidirectional(keras.layers.LSTM(units,
   return_sequences=True))``, 150 units per direction (CSPAN: "150 hidden
   units for the Bi-LSTM models", i.e. d / 2 so the two directions
   concatenate to d = 300), fed the padding mask: each direction runs over
   the real tokens only (the backward one starts at the last real token).
4. Max pooling over the real tokens, per feature.
5. Dropout, then linear logits.

Training (CSPAN, section 4): Adam 1e-3, weight decay 1e-4, batch 64, 30
epochs with the learning rate divided by 10 at epochs 20 and 25.
``Recipe`` has no learning-rate schedule (the steps are not reproduced) and
its ``weight_decay`` is Keras's decoupled decay, where PyTorch's
``Adam(weight_decay=...)`` adds an L2 gradient; both noted, not emulated.

Choices where the sources are silent, documented:

- Pooling: CSPAN does not say how its baseline reads out the sequence; max
  pooling over time is the common choice for classification (and what the
  zoo's CNNs do). The pool is ``MaskedGlobalPooling1D("max")``, the
  library's NaN-safe masked pool: stock ``GlobalMaxPooling1D`` ignores the
  mask (padding outputs could win the max) and an empty text must pool to
  zeros, not to the lowest float.
- Dropout 0.3 on the embeddings and on the pooled features (no rate is
  given for the baseline).
- Keras's LSTM defaults: tanh / sigmoid, unit forget-gate bias, Glorot
  uniform inputs, orthogonal recurrent kernel; no recurrent dropout (which
  would also rule out the fused cuDNN kernel on a GPU).

Parameter count (embedding excluded), d = 300, 150 units, 5 classes: per
direction 4 * (150 * (300 + 150) + 150) = 270,600, twice 541,200; logits
300 * 5 + 5 = 1,505. Total 542,705.
"""

import keras

from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family
from keras_posattn.utils import bidirectional


@register_family("bilstm")
@keras.saving.register_keras_serializable(package="keras_posattn")
class BiLSTM(ZooModel):
    """Bidirectional LSTM with max pooling over the real tokens.

    A reference model from stock Keras recurrent layers.

    Args:
        vocabulary_size, num_classes, max_length, embedding_l2,
        embedding_initializer: the
            contract's (``models.base``); no weight depends on max_length.
        dropout: dropout rate on the embeddings and the pooled features.
        embedding_dim: word vector size (CSPAN: 300).
        trainable_embeddings: ``"oov"``, ``"all"`` or ``"none"``.
        units: LSTM units per direction (CSPAN: 150).
        head_units: units of a ReLU layer before the logits; 0 (default) for
            none.
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        dropout=0.3,
        embedding_dim=300,
        trainable_embeddings="oov",
        embedding_l2=0.0,
        embedding_initializer=None,
        units=150,
        head_units=0,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim,
                                        trainable_embeddings, embedding_l2,
                                        embedding_initializer)
        embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
        recurrent = bidirectional(
            keras.layers.LSTM(units, return_sequences=True), merge_mode="concat", name="bilstm",
        )
        pool = MaskedGlobalPooling1D("max", name="max_pool")
        head = self.make_head(num_classes, hidden_units=head_units, dropout=dropout)

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        padding = keras.ops.not_equal(token_ids, 0)
        x = embedding_dropout(embedding(token_ids))
        h = recurrent(x, mask=padding)
        logits = head(pool(h, mask=padding))
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self.store_arguments(locals())
