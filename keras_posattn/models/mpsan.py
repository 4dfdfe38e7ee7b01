"""MPSAN: Multiple Positional Self-Attention Network (Dai, Li, Xu; AAAI-20).

Read top-down, like the paper's Figure 1:

1. Token embedding ``w`` (GloVe in the paper; OOV rows U(-0.05, 0.05)).
2. Positional Self-Attention Layer: one branch per positional mask. Each
   branch projects ``h = act(W_h w + b_h)`` (eq. 1) and runs a
   ``MaskedSelfAttention`` with the 1-D additive compatibility
   ``f = act((U.h_k + V.h_q + b) / 5)`` (eqs. 6-7). MPSAN's branches are
   FA(2), FA(3), BW+SD, FW+SD (eqs. 8-12).
3. Position-Fusion Layer: Tokens-Position-Weight, a per-feature softmax over
   the k = 5 sources ``[s_fa2, s_fa3, s_bw+sd, s_fw+sd, w]`` computed from
   ``w`` (eqs. 13-16).
4. Multi-dimensional (source2token) attention pooling.
5. Head: dense ``head_units`` then class logits (softmax at export).

Paper text vs. released code (the zoo offers both; ``mpsan`` is the text,
``mpsan_released`` the code):

========================  ===========================  ==========================
choice                    paper text (``mpsan``)       released code
========================  ===========================  ==========================
branch projection act     ELU                          ReLU
compatibility act         ``elu(x / 5)``               ``5 * tanh(x / 5)``
Faraway radius            ``|q-k| <= m``               ``|q-k| < m``
fusion bias b_P           position-dependent (k d, n)  one shared (k d,)
pooling hidden act        ELU                          ReLU
head act                  ELU                          ReLU
logits bias               yes                          no
dropout placement         embedding, fused, head       inputs of linear maps
L2 factor (wd)            1e-7                         1e-6
========================  ===========================  ==========================

``l2`` is the weight-decay factor ``wd`` as TF1 code writes it:
``wd * tf.nn.l2_loss(w) = wd * sum(w ** 2) / 2`` over every kernel (not the
biases, not the embedding). Keras's ``L2(l)`` is ``l * sum(w ** 2)``, so the
kernels get ``L2(wd / 2)``.

Choices the text leaves open, made the same for both and documented:

- One ``W_h`` per branch (Figure 2 draws the projection inside each masked
  attention unit, and the reported 1.09M parameters need four of them).
- The head is a dense layer of ``d`` units before the softmax classifier, as
  in the released code; with it the count is the paper's 1.09M.
- "dropout-ratio 0.7" is read as the keep probability (the code's
  ``keep_prob = 0.7``): dropout rate 0.3. ``dropout_placement="paper"``
  drops the embedding ``w`` (so every branch, the fusion weights and the
  fifth fused source see the same dropped ``w``), the fused sequence and the
  head's inputs. ``dropout_placement="released"`` follows the code: the
  input of each linear map (each branch projection, the fusion's ``W_P``, the
  pooling's two maps, the head) and the ``h`` that feeds the compatibility
  are dropped, each with its own mask; the fused source ``w``, the attention
  values and the pooled values never are.
- Embeddings: pretrained rows frozen, OOV training words trained, PAD and UNK
  rows zero (the released code; the text does not say).

Parameter count at paper settings (d = 300, 5 classes, excluding the
embedding): 4 x (300*300 + 300) projections + 4 x 601 compatibilities +
(300*1500 + 1500) fusion + 2 x (300*300 + 300) pooling + (300*300 + 300) +
(300*5 + 5) head = 1,087,509 ~ 1.09M (paper: 1.09M). The paper-text
``mpsan`` adds 1,500 x (max_length - 1) bias entries for its
position-dependent ``b_P``, which grows with the sequence length; the
released code's logits have no bias (5 fewer).
"""

import keras
from keras import ops

from keras_posattn import masks as masks_lib
from keras_posattn.layers import FusionGate
from keras_posattn.layers import MaskedGlobalPooling1D
from keras_posattn.layers import MaskedSelfAttention
from keras_posattn.layers import MultiDimensionalAttention
from keras_posattn.layers import PositionFusion
from keras_posattn.models.base import DEFAULT_NUM_CLASSES
from keras_posattn.models.base import DEFAULT_VOCABULARY_SIZE
from keras_posattn.models.base import ZooModel
from keras_posattn.models.tf1 import tf1_weight_options
from keras_posattn.registry import register_family

FUSIONS = ("tpw", "gate", "mean")
POOLINGS = ("multi_dimensional", "mean")
DROPOUT_PLACEMENTS = ("paper", "released")


def branch_name(mask):
    """A layer-name-safe name for a branch's mask (``"bw+sd"`` -> ``"bw_sd"``)."""
    return masks_lib.short_name(mask).replace("+", "_")


@register_family("mpsan")
@keras.saving.register_keras_serializable(package="keras_posattn")
class MPSAN(ZooModel):
    """Multiple Positional Self-Attention Network text classifier.

    Takes token ids (batch, n) with 0 as padding and 1 as unknown (what
    ``TextPreprocessor`` makes) and returns class logits (batch,
    num_classes), float32 under any dtype policy.

    Args:
        vocabulary_size: rows of the embedding, PAD and UNK included
            (default 20,000).
        num_classes: number of classes (default 5, as on SST-5).
        max_length: longest sequence; sizes the paper's position-dependent
            fusion bias (``fusion_bias="position"``). Preset: 64.
        dropout: dropout rate (paper: 0.3, the code's keep probability 0.7).
        embedding_dim: d_e (paper: 300; the trainer sets it to the
            pretrained vectors' size).
        trainable_embeddings: ``"oov"`` (pretrained rows frozen, the code),
            ``"all"`` or ``"none"`` (see ``TokenEmbedding``).
        embedding_l2: Keras L2 factor on the trainable embedding table.
        embedding_initializer: the table's initializer before pretrained
            vectors load (None: U(-0.05, 0.05)).
        hidden_dim: d_h; None (default) means ``embedding_dim``, which the
            Tokens-Position-Weight fusion needs (``w`` is a fused source).
        branch_masks: one positional mask per attention branch, as mask
            objects or short names (``"fa2"``, ``"bw+sd"``...). An empty list
            removes the Positional Self-Attention Layer (Table 5 "w/o
            position", Table 2 model 0).
        faraway_rule: ``"paper"`` (``|q-k| <= m``) or ``"released"``
            (``|q-k| < m``) for Faraway masks given by short name.
        branch_activation: activation of each branch's projection.
        compatibility: ``"additive"`` (1-D), ``"multi_dimensional"`` (M-D,
            Table 4) or ``"dot"``.
        compatibility_activation: ``"elu"`` (paper) or ``"scaled_tanh"``
            (code).
        scale: the compatibility constant c (paper: 5).
        fusion: ``"tpw"`` (Tokens-Position-Weight), ``"gate"`` (DiSAN's
            fusion gate per branch, then concatenation; Table 3 "FG") or
            ``"mean"`` (equal-weight average of the sources; Table 5 "w/o
            fusion").
        fusion_bias: ``"position"`` (paper) or ``"shared"`` (code), for TPW.
        pooling: ``"multi_dimensional"`` (source2token attention) or
            ``"mean"`` (masked average; Table 5 "w/o attention" together with
            no branches).
        pooling_activation: hidden activation of the pooling attention
            (paper ELU, code ReLU).
        head_units: units of the dense layer before the logits; None
            (default) means d_h; 0 for none.
        head_activation: its activation (paper ELU, code ReLU).
        logits_bias: whether the logits layer has a bias (the code's has none).
        l2: weight decay ``wd`` in TF1's convention, on every kernel:
            penalty ``wd * sum(w ** 2) / 2`` (Keras ``L2(wd / 2)``).
        dropout_placement: ``"paper"`` or ``"released"`` (see the module
            docstring).
    """

    def __init__(
        self,
        vocabulary_size=DEFAULT_VOCABULARY_SIZE,
        num_classes=DEFAULT_NUM_CLASSES,
        max_length=64,
        dropout=0.3,
        embedding_dim=300,
        trainable_embeddings="oov",
        embedding_l2=0.0,
        embedding_initializer=None,
        hidden_dim=None,
        branch_masks=("fa2", "fa3", "bw+sd", "fw+sd"),
        faraway_rule="paper",
        branch_activation="elu",
        compatibility="additive",
        compatibility_activation="elu",
        scale=5.0,
        fusion="tpw",
        fusion_bias="position",
        pooling="multi_dimensional",
        pooling_activation="elu",
        head_units=None,
        head_activation="elu",
        logits_bias=True,
        l2=1e-7,
        dropout_placement="paper",
        **kwargs,
    ):
        self.check_contract(vocabulary_size, num_classes, max_length, dropout,
                            embedding_dim, trainable_embeddings, embedding_l2)
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}.")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}.")
        if dropout_placement not in DROPOUT_PLACEMENTS:
            raise ValueError(
                f"dropout_placement must be one of {DROPOUT_PLACEMENTS}, got {dropout_placement!r}."
            )
        d = embedding_dim if hidden_dim is None else hidden_dim
        parsed_masks = [masks_lib.parse(m, faraway_rule) for m in branch_masks]
        names = [branch_name(m) for m in parsed_masks]
        if len(set(names)) != len(names):
            raise ValueError(f"Branch masks must be distinct, got {names}.")
        if parsed_masks and fusion in ("tpw", "mean") and d != embedding_dim:
            raise ValueError(
                f"fusion={fusion!r} fuses the attention outputs with the embeddings, so "
                f"hidden_dim ({hidden_dim}) must equal embedding_dim ({embedding_dim}) "
                "(leave hidden_dim=None)."
            )
        if parsed_masks and fusion == "tpw" and fusion_bias == "position" and not max_length:
            raise ValueError(
                "fusion_bias='position' (the paper's b_P) needs max_length; pass "
                "max_length=... or fusion_bias='shared'."
            )

        released = dropout_placement == "released"

        def weight_options():
            return tf1_weight_options(l2)

        # === Layers ===
        embedding = self.make_embedding(vocabulary_size, embedding_dim,
                                        trainable_embeddings, embedding_l2,
                                        embedding_initializer)
        embedding_dropout = keras.layers.Dropout(
            0.0 if released else dropout, name="embedding_dropout"
        )
        branches = []
        for name, mask in zip(names, parsed_masks):
            branches.append({
                "name": name,
                "input_dropout": keras.layers.Dropout(
                    dropout if released else 0.0, name=f"{name}_input_dropout"
                ),
                "projection": keras.layers.Dense(
                    d, activation=branch_activation, name=f"{name}_projection",
                    **weight_options(),
                ),
                "attention": MaskedSelfAttention(
                    mask=mask,
                    compatibility=compatibility,
                    activation=compatibility_activation,
                    scale=scale,
                    compatibility_dropout=dropout if released else 0.0,
                    faraway_rule=faraway_rule,
                    name=f"{name}_attention",
                    **weight_options(),
                ),
                "gate": (
                    FusionGate(name=f"{name}_fusion_gate", **weight_options())
                    if fusion == "gate" else None
                ),
            })
        fusion_layer = None
        if parsed_masks and fusion == "tpw":
            fusion_layer = PositionFusion(
                bias=fusion_bias,
                max_length=max_length,
                input_dropout=dropout if released else 0.0,
                name="position_fusion",
                **weight_options(),
            )
        fused_dropout = keras.layers.Dropout(0.0 if released else dropout, name="fused_dropout")
        if pooling == "multi_dimensional":
            pool = MultiDimensionalAttention(
                activation=pooling_activation,
                input_dropout=dropout if released else 0.0,
                name="pooling",
                **weight_options(),
            )
        else:
            pool = MaskedGlobalPooling1D("average", name="pooling")
        head = self.make_head(
            num_classes,
            hidden_units=d if head_units is None else head_units,
            activation=head_activation,
            dropout=dropout,
            use_bias=logits_bias,
            **weight_options(),
        )
        layers = {
            "embedding": embedding,
            "embedding_dropout": embedding_dropout,
            "branches": branches,
            "fusion": fusion_layer,
            "fusion_kind": fusion,
            "fused_dropout": fused_dropout,
            "concatenate": keras.layers.Concatenate(axis=-1, name="concatenate"),
            "pool": pool,
            "head": head,
        }

        # === Functional Model ===
        token_ids = self.preprocessor_cls.model_input()
        logits = self.forward(layers, token_ids)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self._layers_by_role = layers
        branch_masks = [
            m if isinstance(m, str) else keras.saving.serialize_keras_object(m)
            for m in branch_masks
        ]
        self.store_arguments(locals())

    @property
    def branch_names(self):
        return [b["name"] for b in self._layers_by_role["branches"]]

    @staticmethod
    def forward(layers, token_ids, collect=None, training=None):
        """MPSAN's computation, shared by the functional graph and inspection.

        With ``collect`` (a dict), the attention weights of every branch and of
        the pooling: ``<branch>`` -> (batch, n, n) (for the M-D compatibility,
        averaged over features) and, with the multi-dimensional pooling,
        ``pooling`` -> (batch, n), the pooling weights averaged over features.
        """
        padding = ops.not_equal(token_ids, 0)
        w = layers["embedding"](token_ids)
        w = layers["embedding_dropout"](w, training=training)
        sources = []
        for branch in layers["branches"]:
            h = branch["projection"](branch["input_dropout"](w, training=training))
            s = ZooModel.call_attention(branch["attention"], h, padding, collect, branch["name"],
                                        _over_features(3), training)
            if branch["gate"] is not None:
                s = branch["gate"]([s, h], mask=[padding, padding])
            sources.append(s)

        fusion = layers["fusion_kind"]
        if not sources:
            x = w
        elif fusion == "tpw":
            x = layers["fusion"](sources + [w], mask=[padding] * (len(sources) + 1),
                                 training=training)
        elif fusion == "gate":
            x = sources[0] if len(sources) == 1 else layers["concatenate"](sources)
        else:  # mean
            x = sum(sources[1:], sources[0]) + w
            x = x / float(len(sources) + 1)
        x = layers["fused_dropout"](x, training=training)

        pool = layers["pool"]
        weighted = isinstance(pool, MultiDimensionalAttention)
        pooled = ZooModel.call_attention(pool, x, padding, collect if weighted else None,
                                         "pooling", _over_features(2), training)
        return layers["head"](pooled, training=training)


def _over_features(rank):
    """Weights averaged over their last axis when they have more than ``rank``
    axes (the multi-dimensional forms give one weight per feature)."""
    return lambda weights: ops.mean(weights, axis=-1) if len(weights.shape) > rank else weights
