"""Kim's CNN for sentence classification (Kim, EMNLP 2014).

"Convolutional Neural Networks for Sentence Classification", section 2
(model) and section 3.1 (hyperparameters); SPE-CNN's baselines CNN-static
and CNN-nonstatic (Oh & Kim 2020, section 3.3, Tables 2-3). Read top-down:

1. Word vectors (word2vec 300d in Kim's paper). ``kim_cnn_static`` keeps
   every row frozen, unknown words' random rows included (CNN-static);
   ``kim_cnn_nonstatic`` fine-tunes them all (CNN-non-static).
2. Parallel convolutions with windows 3, 4 and 5, 100 feature maps each,
   ReLU (``MaskedConv1D``).
3. Max-over-time pooling of each feature map over the real tokens
   (``MaskedGlobalPooling1D("max")``), concatenated: 300 features.
4. Dropout 0.5 on that penultimate layer, then the softmax layer, whose
   class weight vectors are held to an l2 norm of at most s = 3 (rescaled
   after each step when longer; ``logits_max_norm``).

Training (section 3.1): mini-batches of 50, Adadelta (Keras's
``Adadelta(learning_rate=1.0)`` is Zeiler's rule without a step size; rho
0.95 as in Kim's code), early stopping on a dev set (10% of train when none
is given; ``Recipe`` has no early stopping, so ``epochs`` is a cap: 25, the
epoch count of Kim's released script).

Choices and deviations, documented:

- Kim's convolution sees windows that overhang the sentence (his code pads
  each sentence with ``h - 1`` zero vectors on both sides: a wide
  convolution with ``n + h - 1`` windows). ``MaskedConv1D`` keeps one
  output per real token (``padding="same"``): the windows centred on the
  first and last tokens overhang by up to two zero vectors, the few windows
  further out are not computed. Every window that holds a real token in the
  middle of a text is the same. A text shorter than a window (even one
  token, or an empty text, which pools to zeros) still gives finite logits.
- Kim's code zero-pads every sentence to the longest one and pools over all
  windows, all-zero ones included (value ``relu(b)``). Here the pool sees
  only the windows centred on real tokens, so a batch's padding never
  changes a logit.
- The max-norm constraint is ``keras.constraints.MaxNorm(3, axis=0)`` on
  the logits kernel: one norm per class column, as Kim's "rescale w to have
  ||w||_2 = s whenever ||w||_2 > s". It is an option (``logits_max_norm``,
  0 for none); it is not applied to the convolutions (Kim applies it to
  the softmax layer's weights only).
- The paper's unknown-word initialisation (uniform with the pretrained
  vectors' variance) is the library's: U(-0.05, 0.05) for OOV rows.

Parameter count (trainable, embedding excluded), d = 300:
convolutions 100 * (3 + 4 + 5) * 300 + 3 * 100 = 360,300; softmax layer
300 * c + c. 360,902 for 2 classes, 362,106 for 6, 363,310 for 10,
366,320 for 20: SPE-CNN's Table 2 lists CNN-static at 361K, 362K, 363K,
366K. CNN-nonstatic adds the fine-tuned embedding (vocabulary x 300).
"""

import keras

from keras_posattn.layers import MaskedConv1D
from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family


@register_family("kim_cnn")
@keras.saving.register_keras_serializable(package="keras_posattn")
class KimCNN(ZooModel):
    """Kim (2014)'s multi-window CNN text classifier.

    Both of Kim's pretrained-vector variants: ``trainable_embeddings``
    chooses static or non-static.

    Args:
        vocabulary_size, num_classes, max_length, embedding_l2,
        embedding_initializer: the
            contract's (``models.base``); no weight depends on max_length.
        dropout: dropout rate on the pooled features (paper: 0.5).
        embedding_dim: word vector size (paper: 300).
        trainable_embeddings: ``"none"`` (CNN-static), ``"all"``
            (CNN-non-static) or ``"oov"``.
        kernel_sizes: the convolution windows (paper: 3, 4, 5).
        filters: feature maps per window (paper: 100).
        conv_activation: the convolutions' activation (paper: ReLU).
        logits_max_norm: largest l2 norm of each class's weight vector
            (paper: 3); 0 or None for no constraint (``zoo.build`` drops
            None overrides, so pass 0 there).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        dropout=0.5,
        embedding_dim=300,
        trainable_embeddings="none",
        embedding_l2=0.0,
        embedding_initializer=None,
        kernel_sizes=(3, 4, 5),
        filters=100,
        conv_activation="relu",
        logits_max_norm=3.0,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        kernel_sizes = [int(k) for k in kernel_sizes]
        if not kernel_sizes or min(kernel_sizes) < 1:
            raise ValueError(f"kernel_sizes must be a non-empty list of windows >= 1, got {kernel_sizes}.")

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim,
                                        trainable_embeddings, embedding_l2,
                                        embedding_initializer)
        branches = [
            (
                MaskedConv1D(filters, k, padding="same", activation=conv_activation,
                             name=f"conv{k}"),
                MaskedGlobalPooling1D("max", name=f"max_pool{k}"),
            )
            for k in kernel_sizes
        ]
        concatenate = keras.layers.Concatenate(name="pooled")
        head = self.make_head(num_classes, hidden_units=0, dropout=dropout,
                              logits_max_norm=logits_max_norm or None)

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        padding = keras.ops.not_equal(token_ids, 0)
        x = embedding(token_ids)
        pooled = [pool(conv(x, mask=padding), mask=padding) for conv, pool in branches]
        z = pooled[0] if len(pooled) == 1 else concatenate(pooled)
        logits = head(z)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self.store_arguments(locals())
