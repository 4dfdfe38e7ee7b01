"""SPE-CNN: a single CNN over word vectors plus sinusoidal positions (Oh & Kim, AACL-IJCNLP 2020).

"Lightweight Text Classifier using Sinusoidal Positional Encoding", section 2
(model) and section 3.2 (hyperparameters); restated in MODELS.md. Read
top-down, like the paper's Figure 1:

1. Frozen pretrained word vectors ``x_i`` (GloVe 840B 300d in the paper).
2. Sinusoidal positional encoding added to them: ``x'_i = x_i + PE(i)``
   (eqs. 1-3, Vaswani et al.'s encoding; ``SinusoidalPositionEncoding``).
3. One convolution, window 3, 128 filters, *linear* activation (eqs. 4-5;
   ``MaskedConv1D``).
4. Layer normalisation (epsilon 1e-6) of the feature maps (eqs. 6-7), then
   padded positions set back to zero.
5. ``z = [max-pool(c); average-pool(c)]`` over the real tokens
   (``MaskedGlobalPooling1D``), dropout 0.1 on ``z``.
6. A dense softmax classifier (``ClassificationHead``, no hidden layer;
   logits here, the softmax belongs to the loss and the export).

Training (section 3.2): Adam, learning rate 1e-4, mini-batch 40, L2 1e-4,
early stopping on a random 10% of the training set, which is the only
stopping rule. ``zoo/spe_cnn.toml`` says it as a ``Recipe``: Adam 1e-4,
batch 40, early stopping on the validation accuracy (patience 5, the best
epoch's weights kept; the paper gives no patience) under a cap of 30
epochs. The trainer holds 10% of the training data out for validation when
no dev file is given (the paper's split); a set with a dev split
validates on it.

Choices the paper leaves open, made here and documented:

- ``position_encoding``: the text writes eqs. 1-2 with ``2i`` and ``2i + 1``,
  i.e. sine and cosine *interleaved* over the channels, so
  ``"interleaved"`` is the default. The paper does not say which
  implementation it ran; the other common one (the TensorFlow Transformer
  tutorial of the time) puts all sines first and all cosines after
  (``"concatenated"``, preset ``spe_cnn_concatenated``). ``"none"`` drops the
  encoding: the paper's SingleCNN-static / -nonstatic ablations (Table 3).
- L2 1e-4 ("l2_regularizer is 0.0001", Keras's argument name) is Keras's
  ``L2(1e-4) = 1e-4 * sum(w ** 2)`` on the two kernels that train: the
  convolution's and the classifier's. Biases, the layer-norm scale and
  offset and the frozen embedding are not penalised.
- Layer normalisation is Keras's ``LayerNormalization(axis=-1)``: at each
  position, over the 128 feature maps (eqs. 6-7 normalise over the H hidden
  units of a layer). Its 128 + 128 weights are what the reported parameter
  counts contain (below).
- Position ``pos`` starts at 0 and the encoding is added at full scale
  (``x + PE``, no weighting).

Deviations:

- The paper's convolution is narrow ("valid": ``L - 3 + 1`` windows).
  ``MaskedConv1D`` keeps outputs aligned with the padding mask, which needs
  ``padding="same"``: the output has one window per real token, and the two
  windows at the text's ends see one zero vector beyond the text. A text
  shorter than the window therefore still has features (the narrow
  convolution would have none). The parameter count does not change.

Parameter count (trainable, the frozen embedding excluded), d = 300:
convolution 3 * 300 * 128 + 128 = 115,328; layer norm 2 * 128 = 256;
classifier (128 + 128) * c + c = 257 c. Total 115,584 + 257 c:
116,098 for 2 classes (IMDB, MR, MPQA: the paper's 116K), 117,126 for 6
(TREC, 117K), 118,154 for 10 (Reuters, 118K), 120,724 for 20 (20 News,
121K). The classifier alone explains the spread from 116K to 121K: 257
parameters per class, since the concatenated max and average pools give
it 256 inputs.
"""

import keras

from keras_posattn.attention_ops import zero_padding
from keras_posattn.layers import MaskedConv1D
from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.layers import SinusoidalPositionEncoding
from keras_posattn.layers.sinusoidal_position_encoding import LAYOUTS
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family

POSITION_ENCODINGS = LAYOUTS + ("none",)


@register_family("spe_cnn")
@keras.saving.register_keras_serializable(package="keras_posattn")
class SPECNN(ZooModel):
    """Single CNN with sinusoidal positional encoding (SPE-CNN) text classifier.

    The paper's model (module docstring); token ids in, logits out.

    Args:
        vocabulary_size, num_classes, max_length, embedding_l2,
        embedding_initializer: the
            contract's (``models.base``); the encoding has no length limit,
            so no weight depends on max_length.
        dropout: dropout rate on the pooled features ``z`` (paper: 0.1).
        embedding_dim: word vector size (paper: 300; the trainer sets it to
            the pretrained vectors' size).
        trainable_embeddings: ``"none"`` (paper: static vectors, the point
            of the model), ``"oov"`` or ``"all"`` (SingleCNN-nonstatic).
        filters: feature maps of the convolution (paper: 128).
        kernel_size: its window (paper: 3).
        conv_activation: its activation (paper: ``"linear"``).
        position_encoding: ``"interleaved"`` (default: eqs. 1-2 as
            written), ``"concatenated"`` or ``"none"`` (no encoding; the
            paper's SingleCNN ablation).
        max_wavelength: base of the encoding's frequencies (paper: 10000).
        layer_norm_epsilon: epsilon of the layer normalisation (paper: 1e-6).
        l2: Keras L2 factor on the convolution and classifier kernels
            (paper: 1e-4).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        dropout=0.1,
        embedding_dim=300,
        trainable_embeddings="none",
        embedding_l2=0.0,
        embedding_initializer=None,
        filters=128,
        kernel_size=3,
        conv_activation="linear",
        position_encoding="interleaved",
        max_wavelength=10000,
        layer_norm_epsilon=1e-6,
        l2=1e-4,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        if position_encoding not in POSITION_ENCODINGS:
            raise ValueError(
                f"position_encoding must be one of {POSITION_ENCODINGS}, got {position_encoding!r}."
            )

        def regularizer():
            return keras.regularizers.L2(l2) if l2 else None

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim,
                                        trainable_embeddings, embedding_l2,
                                        embedding_initializer)
        positions = None
        if position_encoding != "none":
            positions = SinusoidalPositionEncoding(
                max_wavelength=max_wavelength, layout=position_encoding,
                name="position_encoding",
            )
        conv = MaskedConv1D(
            filters, kernel_size, padding="same", activation=conv_activation,
            kernel_regularizer=regularizer(), name="conv",
        )
        norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, name="feature_norm")
        max_pool = MaskedGlobalPooling1D("max", name="max_pool")
        average_pool = MaskedGlobalPooling1D("average", name="average_pool")
        concatenate = keras.layers.Concatenate(name="pooled")
        head = self.make_head(num_classes, hidden_units=0, dropout=dropout,
                              kernel_regularizer=regularizer())

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        padding = keras.ops.not_equal(token_ids, 0)
        x = embedding(token_ids)
        if positions is not None:
            x = positions(x, mask=padding)
        c = conv(x, mask=padding)
        c = zero_padding(norm(c), padding)
        z = concatenate([max_pool(c, mask=padding), average_pool(c, mask=padding)])
        logits = head(z)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self.store_arguments(locals())
