"""EPN: Extensive Pyramid Network for text classification.

Read top-down, like the paper's Figure 1a:

1. Word embedding (300d GloVe, top 30,000 words), dropout 0.5 after it and
   L2 1e-4 on it (section 3.3).
2. Multi-region embedding: parallel convolutions of regions 3, 4 and 5 with
   30, 30 and 40 maps, concatenated to 100 channels (section 2.2,
   ``MultiRegionEmbedding``).
3. ``num_blocks`` pyramid blocks (section 2.3, ``PyramidBlock``; 7 by
   default, 3 "a good choice to try first"): max pooling of size 2 that
   halves the length and the padding mask, a Bi-LSTM of 50 + 50, multi-head
   self-attention (d = 100, 10 heads), and the pre-activation residual
   convolutional block x + f(x) (two ReLU -> Conv1D, kernel 3, 100 maps).
4. Global max pooling over the real positions, then the softmax classifier
   (section 2.4).

Padding never reaches a real position at any level: pooling downsamples the
mask, the Bi-LSTM skips padded steps, the attention blocks padded keys, the
convolutions zero padding. A text shorter than ``2 ** num_blocks`` tokens
keeps one position once it has been halved to one (a window with one real
token pools to it), so the remaining blocks run on that single position.

Choices where the paper is silent, documented and exposed:

- The region embedding has no activation (``region_activation``): the
  paper gives none, and what reads it next - the first block's max pooling
  and Bi-LSTM, whose gates are non-linear - needs none. (EPN's
  pre-activated ReLU convolutions come only after each block's attention;
  unlike DPCNN, no convolution follows the region embedding directly.)
- No dropout or normalisation inside the blocks; the attention's weights get
  ``attention_dropout`` (default 0).
- ``embedding_l2`` is a Keras L2 factor (``1e-4 * sum(w^2)``); the paper
  writes "L2 regularization with parameter 0.0001".

Deviations, off by default (the paper's block), on in the zoo's 50d recipe
(``[epn.glove50d]``): ``shortcuts`` around each block's Bi-LSTM and attention
and ``block_norm``, a LayerNorm after each block. Without them a 7-block EPN
stays at chance on IMDB: at initialisation the attention is uniform, so every
block hands the next one a constant sequence, and each Bi-LSTM shrinks the
difference between texts, so the lower layers get ~100x smaller gradients
than in a 3-block pyramid (``benchmarks/EPN_NOTES.md``).

Parameter count (d = 300 embeddings, 7 blocks, 5 classes, excluding the
embedding): region convolutions 3*300*30+30 + 4*300*30+30 + 5*300*40+40 =
123,100; per block, the Bi-LSTM 2 * 4 * (50 * (100 + 50) + 50) = 60,400, the
attention 4 * (100 * 100 + 100) = 40,400 and the convolutions 2 * (3 * 100 *
100 + 100) = 60,200, so 161,000 per block and 1,127,000 for seven; classifier
100 * 5 + 5 = 505. Total 1,250,605. The paper gives no count.
"""

import keras
from keras import ops

from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.layers import MultiRegionEmbedding
from keras_posattn.layers import PyramidBlock
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family


@register_family("epn")
@keras.saving.register_keras_serializable(package="keras_posattn")
class EPN(ZooModel):
    """Extensive Pyramid Network text classifier.

    Token ids (batch, n), 0 = padding, in; class logits (batch, num_classes) out.

    Args:
        vocabulary_size: rows of the embedding (paper: top 30,000 words;
            default 20,000).
        num_classes: number of classes (default 5).
        max_length: the preprocessor's truncation; EPN has no positional
            parameters (None: any length).
        dropout: after the word embedding (paper: 0.5).
        embedding_dim: word vector size (paper: 300).
        trainable_embeddings: ``"all"`` (paper: GloVe-initialised, trained).
        embedding_l2: Keras L2 factor on the embedding (paper: 1e-4).
        embedding_initializer: the table's initializer before pretrained
            vectors load (None: U(-0.05, 0.05)).
        num_blocks: pyramid blocks (paper: 7; Table 3 compares 1, 3, 5, 7).
        region_sizes, region_filters: the multi-region embedding (paper:
            (3, 4, 5) with (30, 30, 40); Table 4: (3,) or (5,) with (100,)).
        region_activation: of the region convolutions (default none).
        units: width of the blocks (paper: 100; = the region filters' sum).
        num_heads: attention heads (paper: 10).
        kernel_size: the blocks' convolution window (paper: 3).
        attention_dropout: on the attention weights (default 0).
        shortcuts: sub-layers of every block with a shortcut
            ``x + sublayer(x)``: any of ``"bilstm"``, ``"attention"``
            (default none: the paper; a deviation, see ``PyramidBlock``).
        block_norm: a LayerNorm on every block's output (default False:
            the paper; a deviation).
        l2: Keras L2 factor on every kernel of the blocks and the classifier
            (the paper regularises the embedding only: default 0).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        dropout=0.5,
        embedding_dim=300,
        trainable_embeddings="all",
        embedding_l2=1e-4,
        embedding_initializer=None,
        num_blocks=7,
        region_sizes=(3, 4, 5),
        region_filters=(30, 30, 40),
        region_activation=None,
        units=100,
        num_heads=10,
        kernel_size=3,
        attention_dropout=0.0,
        shortcuts=(),
        block_norm=False,
        l2=0.0,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        if sum(region_filters) != units:
            raise ValueError(
                f"The region filters {list(region_filters)} add up to {sum(region_filters)} "
                f"channels, but the pyramid blocks are {units} wide: make them equal."
            )
        if units % 2:
            raise ValueError(f"units ({units}) must be even (a Bi-LSTM of units/2 per direction).")
        regularizer = keras.regularizers.L2(l2) if l2 else None

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim, trainable_embeddings,
                                        embedding_l2, embedding_initializer)
        embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
        regions = MultiRegionEmbedding(region_sizes, region_filters,
                                       activation=region_activation,
                                       kernel_regularizer=regularizer, name="multi_region")
        blocks = [
            PyramidBlock(units=units, lstm_units=units // 2, num_heads=num_heads,
                         kernel_size=kernel_size, dropout=attention_dropout,
                         shortcuts=shortcuts, block_norm=block_norm,
                         kernel_regularizer=regularizer, name=f"pyramid_{i + 1}")
            for i in range(num_blocks)
        ]
        pool = MaskedGlobalPooling1D("max", name="global_max_pool")
        head = self.make_head(num_classes, kernel_regularizer=regularizer)
        layers = {"embedding": embedding, "embedding_dropout": embedding_dropout,
                  "regions": regions, "blocks": blocks, "pool": pool, "head": head}

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        logits = self.forward(layers, token_ids)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self._layers_by_role = layers
        region_sizes, region_filters = list(region_sizes), list(region_filters)
        shortcuts = list(blocks[0].shortcuts) if blocks else list(shortcuts)
        self.store_arguments(locals())

    def attention_tensors(self, inputs):
        """Each block's attention, one map per head: ``block<k>/head<h>``
        (batch, n_k, n_k) with n_k = ceil(n / 2**k)."""
        return {f"{name}/head{h + 1}": weights[:, h]
                for name, weights in super().attention_tensors(inputs).items()
                for h in range(weights.shape[1])}

    @staticmethod
    def forward(layers, token_ids, collect=None, training=None):
        """EPN's computation, shared by the functional graph and inspection
        (with ``collect``, each block's attention under ``block<k>``)."""
        mask = ops.not_equal(token_ids, 0)
        x = layers["embedding_dropout"](layers["embedding"](token_ids), training=training)
        x = layers["regions"](x, mask=mask)
        for k, block in enumerate(layers["blocks"], start=1):
            new_mask = block.compute_mask(x, mask)
            x = ZooModel.call_attention(block, x, mask, collect, f"block{k}", training=training)
            mask = new_mask
        return layers["head"](layers["pool"](x, mask=mask), training=training)
