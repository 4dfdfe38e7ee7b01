"""HAN: Hierarchical Attention Networks (Yang, Yang, Dyer, He, Smola, Hovy; NAACL 2016).

"Hierarchical Attention Networks for Document Classification", section 2:
the hierarchical baseline HCAN's Table 2 compares against (MODELS.md, HCAN).

1. Word encoder: embeddings of each sentence's words, a bidirectional GRU
   (50 units per direction, eqs. 1-4), concatenated states h_it (100).
2. Word attention (``ContextAttention``, eqs. 5-7): u_it = tanh(W_w h_it +
   b_w), weights softmax(u_it . u_w) with a learned context vector u_w,
   sentence vector s_i = sum_t alpha_it h_it.
3. Sentence encoder and attention: the same over the sentence vectors
   (eqs. 8-10), giving the document vector v.
4. Softmax classifier on v (eq. 11).

Input: token ids (batch, sentences, words) from ``DocumentPreprocessor``,
the preprocessor HCAN uses, so both models read the same documents.
Padding is masked at both levels (the GRUs skip padded steps, the
attentions give them no weight); an empty sentence or document pools to a
zero vector.

Choices where the paper is silent (each an argument):

- ``dropout`` (default 0, as in Yang et al.) applies to the document vector
  before the classifier.
- The attention's hidden width ``attention_units`` (the size of u_it and of
  the context vector) is 100, as Yang et al.'s word and sentence context
  vectors; ``embedding_dim`` 200, their word2vec vectors.
- HCAN's Table 2 ran HAN differently ("a bi-directional GRU with 50 units
  and an attention mechanism with a hidden layer of 200 neurons", 512-d
  word2vec for every deep model, Adam 2e-5): the ``han_hcan`` preset,
  ``attention_units=200``, ``embedding_dim=512``, which carries Table 2's
  numbers; ``han`` is Yang et al.'s own configuration.

Parameter count (embedding excluded), 200-d words, 5 classes: word GRU
2 x 3 x (50 x (200 + 50) + 2 x 50) = 75,600 (Keras' ``reset_after`` GRU has
two bias vectors), word attention 100 x 100 + 100 + 100 = 10,200, sentence GRU
2 x 3 x (50 x (100 + 50) + 2 x 50) = 45,600, sentence attention 10,200,
classifier 100 x 5 + 5 = 505: 142,105.
"""

import keras
from keras import ops

from keras_posattn.layers import ContextAttention, FoldSentences, UnfoldSentences
from keras_posattn.models.base import (
    DEFAULT_NUM_CLASSES,
    DEFAULT_VOCABULARY_SIZE,
    ZooModel,
)
from keras_posattn.preprocessing import DocumentPreprocessor
from keras_posattn.registry import register_family
from keras_posattn.utils import bidirectional


@register_family("han")
@keras.saving.register_keras_serializable(package="keras_posattn")
class HAN(ZooModel):
    """Hierarchical attention network (word and sentence BiGRU + attention).

    Token ids (batch, sentences, words) in, logits out (module docstring).

    Args:
        vocabulary_size, num_classes, max_length, embedding_l2,
        embedding_initializer: the contract's (``models.base``); no weight
            depends on ``max_length`` (nor on ``max_sentences``).
        max_sentences: accepted for the document preprocessor's sizes; no
            weight depends on it.
        dropout: dropout rate on the document vector (Yang et al.: none).
        embedding_dim: word vector size (Yang et al.: 200).
        trainable_embeddings: ``"all"`` (default), ``"oov"`` or ``"none"``.
        units: GRU units per direction at both levels (Yang et al.: 50).
        attention_units: width of u_it and of the context vectors (100).

    Attention maps: ``"sentence"`` (batch, S), the sentence attention's
    weights. Word weights are per sentence and not drawn.
    """

    preprocessor_cls = DocumentPreprocessor

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        max_sentences=None,
        dropout=0.0,
        embedding_dim=200,
        trainable_embeddings="all",
        embedding_l2=0.0,
        embedding_initializer=None,
        units=50,
        attention_units=100,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        if int(units) < 1 or int(attention_units) < 1:
            raise ValueError(f"units and attention_units must be >= 1, got {units}, "
                             f"{attention_units}.")

        # === Layers ===
        def gru(level):
            return bidirectional(
                keras.layers.GRU(int(units), return_sequences=True), merge_mode="concat",
                name=f"{level}_bigru",
            )

        layers = {
            "embedding": self.make_embedding(vocabulary_size, embedding_dim,
                                             trainable_embeddings, embedding_l2,
                                             embedding_initializer),
            "fold": FoldSentences(name="fold_sentences"),
            "unfold": UnfoldSentences(name="unfold_sentences"),
            "word_gru": gru("word"),
            "word_attention": ContextAttention(attention_units, name="word_attention"),
            "sentence_gru": gru("sentence"),
            "sentence_attention": ContextAttention(attention_units, name="sentence_attention"),
            "head": self.make_head(num_classes, dropout=dropout),
        }

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        logits = self.forward(layers, token_ids)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self._layers_by_role = layers
        self.store_arguments(locals())

    @staticmethod
    def forward(layers, token_ids, collect=None, training=None):
        """HAN's computation, shared by the functional graph and inspection
        (with ``collect``, ``"sentence"``: the sentence attention's weights
        (batch, S))."""
        words = layers["fold"](token_ids)  # (batch * S, W)
        word_padding = ops.not_equal(words, 0)
        h = layers["word_gru"](layers["embedding"](words), mask=word_padding, training=training)
        sentences = layers["word_attention"](h, mask=word_padding)
        sentences = layers["unfold"](sentences, token_ids)  # (batch, S, 2 * units)
        sentence_padding = ops.any(ops.not_equal(token_ids, 0), axis=-1)
        h = layers["sentence_gru"](sentences, mask=sentence_padding, training=training)
        document = ZooModel.call_attention(layers["sentence_attention"], h, sentence_padding,
                                           collect, "sentence")
        return layers["head"](document, training=training)
