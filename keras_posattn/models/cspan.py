"""CSPAN: Cascaded Semantic and Positional self-Attention Network (Jiang, Zhang,
Zhang; Findings of EMNLP 2020).

Read top-down, like the paper's Figure 1 (the ``fusion="cascade"`` model):

1. Word embedding ``D`` (300d GloVe in the paper, fine-tuned).
2. Semantic self-attention, no projections (section 2.1, eq. 4):
   ``S = LayerNorm(softmax(D D^T / sqrt(d)) D)`` - the library's
   ``MaskedSelfAttention(compatibility="dot")`` with no positional mask.
3. Bi-LSTM over ``S``, d/2 units per direction (``num_layers`` stacked), then
   another parameter-free self-attention and LayerNorm:
   ``P = LayerNorm(Attention(H, H, H))`` (eqs. 5-8).
4. Semantic and positional residual connection ``F = S + P`` (eq. 9).
5. Multi-query attention pooling, ``num_queries`` learned queries sharing one
   tanh MLP (``MultiQueryAttention``, eqs. 10-13), then the softmax
   classifier (eqs. 14-15).

``fusion`` selects the paper's Table 5 schemes of combining semantic and
positional information (Figure 2): ``"embedding"`` (a) F = S; ``"position"``
(b) F = LayerNorm(Attention(D + sinusoidal positions)), a "light-weight
transformer"; ``"relative"`` (c) relative positions in the attention;
``"parallel"`` (d) the Bi-LSTM reads ``D`` instead of ``S``, F = S + P;
``"cascade"`` (e) the proposed model. ``"bilstm"`` is Table 3's baseline
(a Bi-LSTM alone). ``residual=False`` gives F = P (Table 3's "+ self-att").

Choices where the paper is silent, documented and exposed:

- Dropout: the paper gives none; ``dropout`` (default 0.1) drops the
  embeddings and the pooled vector before the classifier.
- Weight decay: the paper trains with PyTorch's Adam(weight_decay=1e-4),
  which adds ``1e-4 * w`` to the gradient of *every* parameter the optimizer
  holds (coupled L2, not AdamW): the embedding, the queries, biases and
  LayerNorms too. That is a recipe's job, not the model's: the paper recipe
  (``zoo/cspan.toml``) sets ``coupled_weight_decay = 1e-4``
  (``Recipe.apply_coupled_weight_decay``) and ``l2 = 0``. ``l2`` here is a
  Keras L2 factor on the kernels only (LSTM kernels, W_h, W_f, the logits;
  ``L2(5e-5)`` gives those kernels PyTorch's 1e-4 gradient), the scope the
  50d recipe keeps because its dev splits preferred it.
- Relative positions (c): Shaw et al. (2018) learn an embedding per clipped
  relative distance and add it to the keys. This library's positional masks
  are parameter-free, so ``"relative"`` adds the ``Distance`` penalty
  ``-|i - j|`` to the semantic attention's logits instead - a deviation.
- The Bi-LSTM layers of ``num_layers > 1`` are stacked Bi-LSTMs of d/2 units.
- Learning-rate schedule (Adam 1e-3, / 10 at epochs 20 and 25 of 30) lives in
  the preset's recipe.

Parameter count (d = 300, 5 classes, 16 queries, excluding the embedding):
Bi-LSTM 2 x 4 x (150 x (300 + 150) + 150) = 541,200; the attentions and
LayerNorms 2 x 600 = 1,200; multi-query attention 16 x 300 + 300 x 300 + 300
+ 16 x 300 x 300 (W_f, no bias) = 1,535,100; classifier 300 x 5 + 5 = 1,505.
Total 2,079,005. The paper gives no count.
"""

import keras
from keras import ops

from keras_posattn.layers import MaskedSelfAttention
from keras_posattn.layers import MultiQueryAttention
from keras_posattn.layers import SinusoidalPositionEncoding
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family
from keras_posattn.utils import bidirectional

FUSIONS = ("cascade", "parallel", "embedding", "position", "relative", "bilstm")


@register_family("cspan")
@keras.saving.register_keras_serializable(package="keras_posattn")
class CSPAN(ZooModel):
    """Cascaded Semantic and Positional self-Attention Network text classifier.

    Token ids (batch, n), 0 = padding, in; class logits (batch, num_classes) out.

    Args:
        vocabulary_size: rows of the embedding (default 20,000).
        num_classes: number of classes (default 5).
        max_length: longest text; CSPAN has no positional parameters, so it
            only documents the preprocessor's truncation (None: any length).
        dropout: on the embeddings and on the pooled vector (paper: none
            given; 0.1).
        embedding_dim: d (paper: 300).
        trainable_embeddings: ``"all"`` (paper: GloVe-initialised, trained),
            ``"oov"`` or ``"none"``.
        embedding_l2: Keras L2 factor on the embedding.
        embedding_initializer: the table's initializer before pretrained
            vectors load (None: U(-0.05, 0.05)). The semantic attention compares raw embeddings:
            small random vectors make it uniform (see the demo preset).
        num_layers: stacked Bi-LSTM layers (base: 1, big: 3).
        num_queries: learned queries of the pooling (base: 16, big: 128).
        query_fusion: ``"concat"`` (paper: Concat(F_1..F_m) W_f) or ``"mean"``
            (see ``MultiQueryAttention``).
        fusion: how semantic and positional information combine (see the
            module docstring; paper: ``"cascade"``).
        residual: F = S + P (paper) or F = P.
        l2: Keras L2 factor on the kernels only (default 0: the paper's
            decay is the recipe's ``coupled_weight_decay``; 5e-5 gives the
            kernels PyTorch's weight decay 1e-4).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        dropout=0.1,
        embedding_dim=300,
        trainable_embeddings="all",
        embedding_l2=0.0,
        embedding_initializer=None,
        num_layers=1,
        num_queries=16,
        query_fusion="concat",
        fusion="cascade",
        residual=True,
        l2=0.0,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}.")
        if embedding_dim % 2:
            raise ValueError(
                f"embedding_dim ({embedding_dim}) must be even: the Bi-LSTM's two directions "
                "of d/2 units are added to the d-wide semantic representation."
            )
        regularizer = keras.regularizers.L2(l2) if l2 else None

        # === Layers ===
        uses_lstm = fusion in ("cascade", "parallel", "bilstm")
        uses_positional = fusion in ("cascade", "parallel")

        def layer_norm(name):
            # PyTorch's epsilon (the paper's framework), not Keras's 1e-3.
            return keras.layers.LayerNormalization(epsilon=1e-5, name=name)

        layers = {
            "embedding": self.make_embedding(vocabulary_size, embedding_dim,
                                             trainable_embeddings, embedding_l2,
                                             embedding_initializer),
            "embedding_dropout": keras.layers.Dropout(dropout, name="embedding_dropout"),
            "fusion": fusion,
            "residual": residual,
            "positions": (SinusoidalPositionEncoding(name="positions")
                          if fusion == "position" else None),
            "semantic": None if fusion == "bilstm" else MaskedSelfAttention(
                mask="d" if fusion == "relative" else None, compatibility="dot",
                name="semantic_attention"),
            "semantic_norm": None if fusion == "bilstm" else layer_norm("semantic_norm"),
            "lstms": [
                bidirectional(
                    keras.layers.LSTM(embedding_dim // 2, return_sequences=True,
                                      kernel_regularizer=regularizer,
                                      recurrent_regularizer=regularizer),
                    name=f"bilstm_{i}")
                for i in range(num_layers if uses_lstm else 0)
            ],
            "positional": (MaskedSelfAttention(compatibility="dot", name="positional_attention")
                           if uses_positional else None),
            "positional_norm": layer_norm("positional_norm") if uses_positional else None,
            "pool": MultiQueryAttention(num_queries, fusion=query_fusion,
                                        kernel_regularizer=regularizer, name="multi_query"),
        }
        head = self.make_head(num_classes, dropout=dropout, kernel_regularizer=regularizer)
        layers["head"] = head

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        logits = self.forward(layers, token_ids)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self._layers_by_role = layers
        self.store_arguments(locals())

    @staticmethod
    def forward(layers, token_ids, collect=None, training=None):
        """CSPAN's computation, shared by the functional graph and inspection.

        With ``collect`` (a dict): ``semantic`` and ``positional``
        self-attention (batch, n, n) where the model has them, and
        ``queries``: each query's weights over the tokens (batch,
        num_queries, n)."""
        padding = ops.not_equal(token_ids, 0)
        d = layers["embedding_dropout"](layers["embedding"](token_ids), training=training)
        fusion = layers["fusion"]
        semantic_input = d
        if fusion == "position":
            semantic_input = layers["positions"](d, mask=padding)
        if fusion != "bilstm":
            s = _normed_attention(layers["semantic"], layers["semantic_norm"], semantic_input,
                                  padding, collect, "semantic", training)
        if fusion in ("embedding", "position", "relative"):
            f = s
        else:
            h = d if fusion in ("parallel", "bilstm") else s
            for lstm in layers["lstms"]:
                h = _zero(lstm(h, mask=padding, training=training), padding)
            if fusion == "bilstm":
                f = h
            else:
                p = _normed_attention(layers["positional"], layers["positional_norm"], h, padding,
                                      collect, "positional", training)
                f = s + p if layers["residual"] else p
        pooled = ZooModel.call_attention(layers["pool"], f, padding, collect, "queries")
        return layers["head"](pooled, training=training)


def _normed_attention(attention, norm, x, padding, collect, name, training):
    x = ZooModel.call_attention(attention, x, padding, collect, name, training=training)
    return _zero(norm(x), padding)


def _zero(x, padding):
    # LayerNorm maps a zero (padding) row to its beta: zero it again.
    return x * ops.cast(ops.expand_dims(padding, -1), x.dtype)
