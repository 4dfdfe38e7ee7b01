"""ShallowCNN: one convolutional layer over the word embeddings (Johnson &
Zhang, 2015), as the EPN paper uses it for a baseline (its section 3.2).

Word embedding -> one mask-aware convolution (``filters`` = 500 maps, window
``kernel_size`` = 3, ReLU) -> max pooling over the real positions -> dropout
-> softmax classifier.

Choices where the EPN paper is silent, documented and exposed: the window 3
(Johnson & Zhang's region size for sentiment), ReLU, dropout 0.5 on the pooled
vector. Parameter count (d = 300, 5 classes, excluding the embedding):
3*300*500 + 500 = 450,500 and 500*5 + 5 = 2,505: 453,005.
"""

import keras
from keras import ops

from keras_posattn.layers import MaskedConv1D
from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.registry import register_family


@register_family("shallow_cnn")
@keras.saving.register_keras_serializable(package="keras_posattn")
class ShallowCNN(ZooModel):
    """One-layer CNN text classifier.

    Args:
        vocabulary_size, num_classes, max_length, embedding_dim,
        trainable_embeddings, embedding_l2, embedding_initializer: the model
            contract (see ``ZooModel``).
        dropout: on the pooled vector (default 0.5).
        filters: feature maps (paper: 500).
        kernel_size: the window (default 3).
        activation: of the convolution (default ReLU).
        l2: Keras L2 factor on the kernels.
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
        filters=500,
        kernel_size=3,
        activation="relu",
        l2=0.0,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        regularizer = keras.regularizers.L2(l2) if l2 else None

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim, trainable_embeddings,
                                        embedding_l2, embedding_initializer)
        conv = MaskedConv1D(filters, kernel_size, activation=activation,
                            kernel_regularizer=regularizer, name="conv")
        pool = MaskedGlobalPooling1D("max", name="global_max_pool")
        head = self.make_head(num_classes, dropout=dropout, kernel_regularizer=regularizer)

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        mask = ops.not_equal(token_ids, 0)
        logits = head(pool(conv(embedding(token_ids), mask=mask), mask=mask))
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self.store_arguments(locals())
