"""DPCNN: Deep Pyramid Convolutional Neural Networks (Johnson & Zhang, ACL 2017),
and DPCNN+, as the EPN paper compares them (its section 3.2).

Read top-down:

1. Word embedding (the EPN paper gives every baseline the same GloVe vectors).
2. Text region embedding: a linear convolution of region 3 with 250 maps.
3. ``num_blocks`` levels: ``convs_per_level`` pre-activation residual blocks
   ``x + f(x)`` (f = two ReLU -> Conv1D, kernel 3, 250 maps;
   ``ResidualConvBlock``), then downsampling max pooling of size 3, stride 2
   (``MaskedMaxPooling1D``: the length and the padding mask halve). The pool
   comes after the residual add, as in the author's reference code.
4. Global max pooling over the real positions, dropout 0.5 on it, the
   softmax classifier.

DPCNN has one residual block per level; DPCNN+ (EPN's baseline with as many
layers as EPN's pyramid blocks) has two, so four convolutions and two
shortcuts per level. EPN compares them at its 7 levels.

Choices, documented and exposed: dropout (0.5) is on the pooled vector only,
where Johnson & Zhang put it ("the input to the top layer"); their weight
decay 1e-4 is a gradient of ``1e-4 * w``, a Keras ``L2(5e-5)`` on the
kernels (``l2``).

Parameter count (d = 300, 7 levels, 5 classes, excluding the embedding):
region 3*300*250 + 250 = 225,250; per residual block 2 * (3*250*250 + 250) =
375,500, times 7 = 2,628,500 (DPCNN+ 5,257,000); classifier 250*5 + 5 = 1,255.
DPCNN 2,855,005; DPCNN+ 5,483,505.
"""

import keras
from keras import ops

from keras_posattn.layers import MaskedConv1D
from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.layers import MaskedMaxPooling1D
from keras_posattn.layers import ResidualConvBlock
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family


@register_family("dpcnn")
@keras.saving.register_keras_serializable(package="keras_posattn")
class DPCNN(ZooModel):
    """Deep Pyramid CNN text classifier (and DPCNN+ with ``convs_per_level=2``).

    Args:
        vocabulary_size, num_classes, max_length, embedding_dim,
        trainable_embeddings, embedding_l2, embedding_initializer: the model
            contract (see ``ZooModel``).
        dropout: on the pooled vector (paper: 0.5).
        num_blocks: pyramid levels (EPN's comparison: 7).
        convs_per_level: residual blocks per level (DPCNN 1, DPCNN+ 2).
        filters: feature maps everywhere (paper: 250).
        region_size: the region embedding's window (paper: 3).
        kernel_size: the blocks' window (paper: 3).
        pool_size, pool_strides: the downsampling (paper: 3, 2).
        l2: Keras L2 factor on every kernel (5e-5 = weight decay 1e-4).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=None,
        dropout=0.5,
        embedding_dim=300,
        trainable_embeddings="all",
        embedding_l2=0.0,
        embedding_initializer=None,
        num_blocks=7,
        convs_per_level=1,
        filters=250,
        region_size=3,
        kernel_size=3,
        pool_size=3,
        pool_strides=2,
        l2=5e-5,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        regularizer = keras.regularizers.L2(l2) if l2 else None

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim, trainable_embeddings,
                                        embedding_l2, embedding_initializer)
        region = MaskedConv1D(filters, region_size, kernel_regularizer=regularizer,
                              name="region_embedding")
        levels = [
            ([ResidualConvBlock(filters, kernel_size, kernel_regularizer=regularizer,
                                name=f"level_{i + 1}_block_{j + 1}")
              for j in range(convs_per_level)],
             MaskedMaxPooling1D(pool_size, pool_strides, name=f"level_{i + 1}_pool"))
            for i in range(num_blocks)
        ]
        pool = MaskedGlobalPooling1D("max", name="global_max_pool")
        head = self.make_head(num_classes, dropout=dropout, kernel_regularizer=regularizer)

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        mask = ops.not_equal(token_ids, 0)
        x = region(embedding(token_ids), mask=mask)
        for blocks, downsample in levels:
            for block in blocks:
                x = block(x, mask=mask)
            new_mask = downsample.compute_mask(x, mask)
            x = downsample(x, mask=mask)
            mask = new_mask
        logits = head(pool(x, mask=mask))
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self.store_arguments(locals())
