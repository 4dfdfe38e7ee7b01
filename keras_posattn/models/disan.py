"""DiSAN: Directional Self-Attention Network (Shen, Zhou, Long, Jiang, Pan, Zhang; AAAI-18).

"DiSAN: Directional Self-Attention Network for RNN/CNN-Free Language
Understanding", section 4 (directional self-attention, the fusion gate,
DiSAN); MPSAN's main peer (MODELS.md: MPSAN Tables 1, 3, 6 and 7). Read
top-down:

1. Word embedding ``x`` (GloVe 6B 300d; pretrained rows frozen, OOV rows
   trained, as in the released code).
2. Directional self-attention, once per direction, each with its own
   weights: ``h = act(W_h x + b_h)``; multi-dimensional compatibility
   ``f(h_i, h_j) = 5 tanh((W_1 h_i + W_2 h_j + b) / 5) + M`` (one logit per
   feature, ``MaskedSelfAttention(compatibility="multi_dimensional",
   activation="scaled_tanh")``); per-feature softmax over the keys;
   ``s_j = sum_i p_ij * h_i``.
3. Fusion gate per direction: ``F = sigmoid(W_f1 s + W_f2 h + b_f)``,
   ``u = F * h + (1 - F) * s`` (``FusionGate``).
4. ``[u_fw; u_bw]`` (2 d_h per token), pooled by multi-dimensional
   (source2token) attention (``MultiDimensionalAttention``).
5. Head: a dense layer of d_h units with ReLU, then linear logits without
   bias (``ClassificationHead``).

Direction names. DiSAN calls "forward" the mask under which query ``i``
attends only keys ``j < i`` (earlier tokens; its code:
``direct_mask = row > col`` with rows the queries), and "backward" the
opposite. This library names masks by what a query may see, so DiSAN's
*forward* branch uses ``masks.Backward()`` (``"bw"``) and its *backward*
branch ``masks.Forward()`` (``"fw"``). Both block the diagonal, as in
DiSAN. Layers and ``attention_maps`` keys use DiSAN's names: ``"forward"``
is the branch whose query sees the past.

The head: the DiSAN paper describes the sentence encoder; its released SST
code classifies the encoding with a ReLU dense layer of d_h = 300 units and
a linear layer without bias. MPSAN's Table 1 counts DiSAN at 1.8M
parameters, which that head is needed to reach (below); MPSAN's code, built
on DiSAN's, has the same head (MODELS.md, MPSAN item 5).

Defaults (paper and released SST code): d_h = d_e = 300, c = 5, activation
ELU (the paper's and the code's ``disan()`` default; the released SST script
passes ReLU: ``activation="relu"``), dropout 0.3 (the code's keep
probability 0.7) on the input of every linear map as the code places it:
the embedding before each projection (one mask per direction), the copy of
``h`` that feeds the compatibility (the values ``h`` stay undropped), the
inputs of the pooling's two maps and of the head's two layers. L2
``wd = 1e-4`` in TF1's convention (``wd * sum(w ** 2) / 2``) on every
kernel, not biases nor the embedding: Keras ``L2(wd / 2)``. Training:
Adadelta 0.5, batch 64 (``zoo/disan.toml``). The code also keeps an
exponential moving average 0.999 of the weights but scores dev and test on
the raw weights, so the recipe keeps none.

Deviations from the released code:

- Its fusion gate drops its two inputs (keep 0.7) and has three bias
  vectors (one per linear map plus one more); ``FusionGate`` has no dropout
  and one bias (600 parameters fewer per direction).
- SST is trained on the sentences here; the paper trains on every labelled
  phrase of the training trees (the data loaders' issue).

Parameter count (embedding excluded), d = 300, 5 classes:
per direction, projection 300 * 300 + 300 = 90,300, compatibility
2 * 300 * 300 + 300 = 180,300, fusion gate 2 * 300 * 300 + 300 = 180,300:
450,900, twice 901,800; pooling over 600 features 2 * (600 * 600 + 600) =
721,200; head 600 * 300 + 300 = 180,300 and 300 * 5 = 1,500. Total
1,804,800 ~ 1.8M (MPSAN's Table 1: 1.8m; the released code's extra gate
biases make it 1,806,000).
"""

import keras
from keras import ops

from keras_posattn import masks as masks_lib
from keras_posattn.layers import FusionGate
from keras_posattn.layers import MaskedSelfAttention
from keras_posattn.layers import MultiDimensionalAttention
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.models.tf1 import tf1_weight_options
from keras_posattn.registry import register_family

#: DiSAN's direction name -> the library's mask that lets a query see that way.
DIRECTIONS = {
    "forward": masks_lib.Backward,  # query i attends keys j < i
    "backward": masks_lib.Forward,  # query i attends keys j > i
}


@register_family("disan")
@keras.saving.register_keras_serializable(package="keras_posattn")
class DiSAN(ZooModel):
    """Directional Self-Attention Network text classifier.

    Weights and attention as in section 4 (module docstring); token ids in,
    logits out, ``attention_maps`` for both directions and the pooling.

    Args:
        vocabulary_size, num_classes, max_length, embedding_l2,
        embedding_initializer: the
            contract's (``models.base``); no weight depends on max_length.
        dropout: dropout rate on the inputs of the linear maps (paper 0.3,
            the code's keep probability 0.7).
        embedding_dim: d_e (paper: 300).
        trainable_embeddings: ``"oov"`` (pretrained rows frozen, the code),
            ``"all"`` or ``"none"``.
        hidden_dim: d_h; None (default) means ``embedding_dim``.
        activation: of the projections and of the pooling's hidden layer
            (``"elu"``, the paper; the released SST script uses ``"relu"``).
        scale: the compatibility constant c (paper: 5).
        head_units: units of the ReLU layer before the logits; None
            (default) means d_h; 0 for none.
        head_activation: its activation (code: ReLU).
        logits_bias: whether the logits layer has a bias (code: no).
        l2: weight decay ``wd`` in TF1's convention on every kernel
            (code: 1e-4): Keras ``L2(wd / 2)``.
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
        hidden_dim=None,
        activation="elu",
        scale=5.0,
        head_units=None,
        head_activation="relu",
        logits_bias=False,
        l2=1e-4,
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        d = embedding_dim if hidden_dim is None else int(hidden_dim)

        def weight_options():
            return tf1_weight_options(l2)

        # === Layers ===
        branches = []
        for direction, mask in DIRECTIONS.items():
            branches.append({
                "name": direction,
                "input_dropout": keras.layers.Dropout(dropout, name=f"{direction}_input_dropout"),
                "projection": keras.layers.Dense(
                    d, activation=activation, name=f"{direction}_projection", **weight_options()
                ),
                "attention": MaskedSelfAttention(
                    mask=mask(),
                    compatibility="multi_dimensional",
                    activation="scaled_tanh",
                    scale=scale,
                    compatibility_dropout=dropout,
                    name=f"{direction}_attention",
                    **weight_options(),
                ),
                "gate": FusionGate(name=f"{direction}_fusion_gate", **weight_options()),
            })
        layers = {
            "embedding": self.make_embedding(vocabulary_size, embedding_dim,
                                             trainable_embeddings, embedding_l2,
                                             embedding_initializer),
            "branches": branches,
            "concatenate": keras.layers.Concatenate(axis=-1, name="concatenate"),
            "pool": MultiDimensionalAttention(
                activation=activation, input_dropout=dropout, name="pooling",
                **weight_options(),
            ),
            "head": self.make_head(
                num_classes,
                hidden_units=d if head_units is None else head_units,
                activation=head_activation,
                dropout=dropout,
                use_bias=logits_bias,
                **weight_options(),
            ),
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
        """DiSAN's computation, shared by the functional graph and inspection.

        With ``collect`` (a dict), the attention weights of both directions and
        of the pooling, averaged over the features: ``"forward"`` and
        ``"backward"`` (DiSAN's names; ``"forward"``'s query sees earlier
        tokens) -> (batch, n, n) ``[query, key]``; ``"pooling"`` -> (batch, n).
        """
        padding = ops.not_equal(token_ids, 0)
        x = layers["embedding"](token_ids)
        fused = []
        for branch in layers["branches"]:
            h = branch["projection"](branch["input_dropout"](x, training=training))
            s = ZooModel.call_attention(branch["attention"], h, padding, collect, branch["name"],
                                        _feature_mean, training)
            fused.append(branch["gate"]([s, h], mask=[padding, padding]))
        u = layers["concatenate"](fused)
        pooled = ZooModel.call_attention(layers["pool"], u, padding, collect, "pooling",
                                         _feature_mean, training)
        return layers["head"](pooled, training=training)


def _feature_mean(weights):
    # DiSAN's attentions are multi-dimensional: one weight per feature.
    return ops.mean(weights, axis=-1)
