"""HCAN: Hierarchical Convolutional Attention Networks (Gao, Ramanathan, Tourassi; 2018).

"Hierarchical Convolutional Attention Networks for Text Classification"
(``../shared/papers/003_*.txt``, restated in ``MODELS.md``). One block,
applied to the words of each sentence and then to the sentence vectors of
the document (section 3.5, Figure 1):

1. Learned positional embeddings added to the block's inputs
   (``PositionEmbedding``, N(0, 0.1) as in the released code), then dropout
   0.1 (section 3.7).
2. Convolutional multi-head self-attention (``ConvMultiHeadSelfAttention``):
   Q, K, V = ELU(Conv1D(E, k=3) + b), h heads, scaled dot product; with
   "two self-attentions" a second one in parallel whose V uses tanh, the
   outputs multiplied elementwise; LayerNorm; no residual, no feed-forward.
3. A sequence vector: convolutional multi-head target attention
   (``TargetAttention``: one learned target vector as the query,
   K = ELU(Conv1D(E)), V the sequence itself as in the released code) or,
   in the paper's "maxpool" variants, a global max pool over real positions.
4. The document vector goes to the softmax classifier.

``hcan`` is the hierarchical model: token ids (batch, sentences, words)
from ``DocumentPreprocessor`` (the exported model still takes one raw
string per document). ``hcan_flat`` ("Conv Attention Network" in Table 2)
runs one block over the document's words, from ``TextPreprocessor``.
Table 2's eight variants are presets (``zoo.list_models("hcan*")``).

Padding. The paper trains one document per step without padding; this
implementation batches, so padding is masked at both levels: padded words
get no position, no attention weight and no convolution input, and a
sentence without words (padding, or the whole of an empty document) gets a
zero vector and is masked at the sentence level. An empty document gives
finite logits (those of a zero document vector).

Choices where the paper is silent (each an argument):

- ``embedding_dim`` 512 (the paper trains 512-d word2vec vectors) and
  ``units`` 512: the block's width d; with pretrained 50-d vectors the word
  level reads 50-d inputs and the block maps them to d.
- The target attention's values are the sequence itself
  (``project_values=False``, the released code), so the sentence vector is
  d wide; ``True`` projects them as eq. (5) is printed.
- Dropout 0.1 on the embeddings (after the positions are added) at each
  level and on the attention weights of every attention.
- Learned position tables of ``max_length`` word positions and
  ``max_sentences`` sentence positions (the preprocessor's limits); a longer
  input is an error, never a silent truncation, inside the model.
"""

import keras
from keras import ops

from keras_posattn.layers import (
    ConvMultiHeadSelfAttention,
    FoldSentences,
    MaskedGlobalPooling1D,
    PositionEmbedding,
    TargetAttention,
    UnfoldSentences,
)
from keras_posattn.models.base import (
    DEFAULT_NUM_CLASSES,
    DEFAULT_VOCABULARY_SIZE,
    ZooModel,
)
from keras_posattn.preprocessing import DocumentPreprocessor
from keras_posattn.registry import register_family

POOLINGS = ("target", "max")


def _check(self_attentions, pooling, units, num_heads):
    if self_attentions not in (1, 2):
        raise ValueError(f"self_attentions must be 1 or 2, got {self_attentions!r}.")
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}.")
    if int(units) % int(num_heads):
        raise ValueError(f"units ({units}) must be divisible by num_heads ({num_heads}).")


def _block(level, max_positions, dropout, units, num_heads, kernel_size, self_attentions,
           pooling, project_values, layer_norm_epsilon):
    """The layers of one HCAN block (positions, dropout, self-attention, pooling)."""
    if pooling == "target":
        pool = TargetAttention(units=units, num_heads=num_heads, kernel_size=kernel_size,
                               project_values=project_values, dropout=dropout,
                               name=f"{level}target_attention")
    else:
        pool = MaskedGlobalPooling1D("max", name=f"{level}max_pool")
    return {
        "positions": PositionEmbedding(max_positions, name=f"{level}position_embedding"),
        "dropout": keras.layers.Dropout(dropout, name=f"{level}embedding_dropout"),
        "attention": ConvMultiHeadSelfAttention(
            units=units, num_heads=num_heads, kernel_size=kernel_size,
            parallel=self_attentions == 2, dropout=dropout,
            layer_norm_epsilon=layer_norm_epsilon, name=f"{level}self_attention",
        ),
        "pool": pool,
        "prefix": level,
    }


def _run_block(block, x, padding, collect, training):
    """One block over (batch, n, d) with padding (batch, n) -> (batch, d').

    With ``collect``: the self-attentions' and the target attention's
    weights, averaged over heads, as ``<level>self_attention`` (and
    ``<level>self_attention_tanh``) (batch, n, n) [query, key] and
    ``<level>target`` (batch, n)."""
    x = block["positions"](x, mask=padding)
    x = block["dropout"](x, training=training)
    prefix = block["prefix"]
    x = ZooModel.call_attention(
        block["attention"], x, padding, collect,
        (f"{prefix}self_attention", f"{prefix}self_attention_tanh"), _head_mean, training)
    if isinstance(block["pool"], TargetAttention):
        return ZooModel.call_attention(block["pool"], x, padding, collect, f"{prefix}target",
                                       _head_mean, training)
    return block["pool"](x, mask=padding)


def _head_mean(weights):
    return ops.mean(weights, axis=1)


class _HCANBase(ZooModel):
    """What the two HCAN families share: their constructor's work."""

    def _build(self, arguments, levels, **kwargs):
        """Check the constructor's ``arguments`` (its ``locals()``), make the
        layers - the embedding, one block per entry of ``levels`` (role ->
        (layer-name prefix, position table size)), the head - build the
        functional model through ``forward`` and store the arguments. With
        two levels the sentences are folded into the batch between them."""
        a = arguments
        self.check_contract(a["vocabulary_size"], a["num_classes"], a["max_length"], a["dropout"],
                            a["embedding_dim"], a["trainable_embeddings"], a["embedding_l2"])
        _check(a["self_attentions"], a["pooling"], a["units"], a["num_heads"])
        if not 0.0 <= float(a["document_dropout"]) < 1.0:
            raise ValueError(f"document_dropout must be in [0, 1), got {a['document_dropout']}.")
        block = {k: a[k] for k in ("dropout", "units", "num_heads", "kernel_size",
                                   "self_attentions", "pooling", "project_values",
                                   "layer_norm_epsilon")}

        # === Layers ===
        layers = {"embedding": self.make_embedding(a["vocabulary_size"], a["embedding_dim"],
                                                   a["trainable_embeddings"], a["embedding_l2"],
                                                   a["embedding_initializer"])}
        if len(levels) > 1:
            layers.update(fold=FoldSentences(name="fold_sentences"),
                          unfold=UnfoldSentences(name="unfold_sentences"))
        for role, (prefix, positions) in levels.items():
            layers[role] = _block(prefix, int(positions), **block)
        # The released code drops out the document vector (keep 0.9) before
        # the classifier; the paper does not say so: document_dropout.
        layers["head"] = self.make_head(a["num_classes"], dropout=a["document_dropout"])

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        logits = self.forward(layers, token_ids)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self._layers_by_role = layers
        self.store_arguments(arguments)


@register_family("hcan")
@keras.saving.register_keras_serializable(package="keras_posattn")
class HCAN(_HCANBase):
    """Hierarchical convolutional attention network (words -> sentences -> document).

    Token ids (batch, sentences, words) in (``DocumentPreprocessor``), logits
    out. The module docstring has the model and the choices made.

    Args:
        vocabulary_size, num_classes, embedding_l2, embedding_initializer:
            the contract's (``models.base``).
        max_length: words per sentence the word-level position table holds
            (the preprocessor's ``max_length``).
        max_sentences: sentences per document the sentence-level position
            table holds (the preprocessor's ``max_sentences``).
        dropout: on the embeddings (positions added) at both levels and on
            every attention's weights (paper: 0.1).
        embedding_dim: word vector size (paper: 512, trained word2vec).
        trainable_embeddings: ``"all"`` (default), ``"oov"`` or ``"none"``.
        units: d, the width of every convolution (paper: 512).
        num_heads: h (paper: 8).
        kernel_size: the convolutions' window (paper: 3).
        self_attentions: 2 (the paper's HCAN: the ELU and the tanh attention
            in parallel, multiplied) or 1 (the ELU one).
        pooling: ``"target"`` (target attention, the paper's HCAN) or
            ``"max"`` (global max pool, Table 2's "Maxpool").
        project_values: whether the target attention projects its values
            (eq. 5 as printed) or uses the sequence (released code).
        layer_norm_epsilon: of the self-attentions' layer normalisation.
        document_dropout: dropout on the document vector before the
            classifier: 0 (the paper, which gives none) or 0.1 (the released
            code's ``keep_prob`` 0.9 there).

    Attention maps (``attention_maps``): ``"sentence_self_attention"``
    (batch, S, S) and, with two self-attentions,
    ``"sentence_self_attention_tanh"``: the sentence-level weights averaged
    over heads; ``"sentence_target"`` (batch, S): the target attention's
    weights over sentences. Word-level weights are per sentence
    (batch, S, W, W) and are not drawn.
    """

    preprocessor_cls = DocumentPreprocessor

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=100,
        max_sentences=64,
        dropout=0.1,
        embedding_dim=512,
        trainable_embeddings="all",
        embedding_l2=0.0,
        embedding_initializer=None,
        units=512,
        num_heads=8,
        kernel_size=3,
        self_attentions=2,
        pooling="target",
        project_values=False,
        layer_norm_epsilon=1e-6,
        document_dropout=0.0,
        **kwargs,
    ):
        if max_length is None or max_sentences is None or int(max_sentences) < 1:
            raise ValueError("HCAN needs max_length (words per sentence) and max_sentences "
                             f"(sentences per document) >= 1, got {max_length}, {max_sentences}.")
        self._build(locals(), {"words": ("word_", max_length),
                               "sentences": ("sentence_", max_sentences)}, **kwargs)

    @staticmethod
    def forward(layers, token_ids, collect=None, training=None):
        """HCAN's computation, shared by the functional graph and inspection
        (with ``collect``, a dict, the sentence-level weights go into it)."""
        words = layers["fold"](token_ids)  # (batch * S, W)
        word_padding = ops.not_equal(words, 0)
        x = layers["embedding"](words)
        sentences = _run_block(layers["words"], x, word_padding, None, training)
        sentences = layers["unfold"](sentences, token_ids)  # (batch, S, d)
        sentence_padding = ops.any(ops.not_equal(token_ids, 0), axis=-1)
        document = _run_block(layers["sentences"], sentences, sentence_padding, collect,
                              training)
        return layers["head"](document, training=training)


@register_family("hcan_flat")
@keras.saving.register_keras_serializable(package="keras_posattn")
class FlatHCAN(_HCANBase):
    """HCAN's block over the whole text ("Conv Attention Network" in Table 2).

    Token ids (batch, n) in (``TextPreprocessor``), logits out: positions,
    dropout, convolutional self-attention(s), target attention or max pool,
    classifier. Arguments as ``HCAN``'s (``document_dropout`` on the pooled
    text vector), without ``max_sentences``;
    ``max_length`` is the longest text the position table holds.

    Attention maps: ``"self_attention"`` (batch, n, n) (and
    ``"self_attention_tanh"`` with two self-attentions), head-averaged;
    ``"target"`` (batch, n) with target attention.
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=512,
        dropout=0.1,
        embedding_dim=512,
        trainable_embeddings="all",
        embedding_l2=0.0,
        embedding_initializer=None,
        units=512,
        num_heads=8,
        kernel_size=3,
        self_attentions=2,
        pooling="target",
        project_values=False,
        layer_norm_epsilon=1e-6,
        document_dropout=0.0,
        **kwargs,
    ):
        if max_length is None:
            raise ValueError("hcan_flat needs max_length (its learned position table's size).")
        self._build(locals(), {"block": ("", max_length)}, **kwargs)

    @staticmethod
    def forward(layers, token_ids, collect=None, training=None):
        padding = ops.not_equal(token_ids, 0)
        x = layers["embedding"](token_ids)
        pooled = _run_block(layers["block"], x, padding, collect, training)
        return layers["head"](pooled, training=training)
