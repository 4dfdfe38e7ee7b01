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
L2 factor                 1e-7                         1e-6
========================  ===========================  ==========================

Choices the text leaves open, made the same for both and documented:

- One ``W_h`` per branch (Figure 2 draws the projection inside each masked
  attention unit, and the reported 1.09M parameters need four of them).
- The head is a dense layer of ``d`` units before the softmax classifier, as
  in the released code; with it the count is the paper's 1.09M.
- "dropout-ratio 0.7" is read as the keep probability (the code's
  ``keep_prob = 0.7``): dropout rate 0.3, on the embedding, on the fused
  sequence, and in the head.
- Embeddings: pretrained rows frozen, OOV training words trained, PAD and UNK
  rows zero (the released code; the text does not say).

Parameter count at paper settings (d = 300, 5 classes, excluding the
embedding): 4 x (300*300 + 300) projections + 4 x 601 compatibilities +
(300*1500 + 1500) fusion + 2 x (300*300 + 300) pooling + (300*300 + 300) +
(300*5 + 5) head = 1,087,509 ~ 1.09M (paper: 1.09M). The paper-text
``mpsan`` adds 1,500 x (max_length - 1) bias entries for its
position-dependent ``b_P``, which grows with the sequence length.
"""

import keras
from keras import ops

from keras_posattn import masks as masks_lib
from keras_posattn.layers import FusionGate
from keras_posattn.layers import MaskedSelfAttention
from keras_posattn.layers import MultiDimensionalAttention
from keras_posattn.layers import PositionFusion
from keras_posattn.layers import TokenEmbedding

FUSIONS = ("tpw", "gate", "mean")
POOLINGS = ("multi_dimensional", "mean")


def branch_name(mask):
    """A layer-name-safe name for a branch's mask (``"bw+sd"`` -> ``"bw_sd"``)."""
    return masks_lib.short_name(mask).replace("+", "_")


@keras.saving.register_keras_serializable(package="keras_posattn")
class MPSAN(keras.Model):
    """Multiple Positional Self-Attention Network text classifier.

    Takes token ids (batch, n) with 0 as padding and 1 as unknown (as
    ``keras.layers.TextVectorization`` numbers them) and returns class logits
    (batch, num_classes), float32 under any dtype policy.

    Args:
        vocabulary_size: rows of the embedding, PAD and UNK included.
        num_classes: number of classes.
        embedding_dim: d_e (paper: 300).
        hidden_dim: d_h (paper: 300; must equal ``embedding_dim`` with
            ``fusion="tpw"``, since ``w`` is one of the fused sources).
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
        max_length: longest sequence; required by ``fusion_bias="position"``.
        pooling: ``"multi_dimensional"`` (source2token attention) or
            ``"mean"`` (masked average; Table 5 "w/o attention" together with
            no branches).
        pooling_activation: hidden activation of the pooling attention.
        head_units: units of the dense layer before the logits (0: none).
        head_activation: its activation.
        dropout: dropout rate between layers.
        l2: L2 factor on every kernel.
        trainable_embeddings: ``"oov"``, ``"all"`` or ``"none"`` (see
            ``TokenEmbedding``).
    """

    def __init__(
        self,
        vocabulary_size,
        num_classes,
        embedding_dim=300,
        hidden_dim=300,
        branch_masks=("fa2", "fa3", "bw+sd", "fw+sd"),
        faraway_rule="paper",
        branch_activation="elu",
        compatibility="additive",
        compatibility_activation="elu",
        scale=5.0,
        fusion="tpw",
        fusion_bias="position",
        max_length=None,
        pooling="multi_dimensional",
        pooling_activation="elu",
        head_units=300,
        head_activation="elu",
        dropout=0.3,
        l2=1e-7,
        trainable_embeddings="oov",
        **kwargs,
    ):
        if fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {FUSIONS}, got {fusion!r}.")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}.")
        parsed_masks = [masks_lib.parse(m, faraway_rule) for m in branch_masks]
        names = [branch_name(m) for m in parsed_masks]
        if len(set(names)) != len(names):
            raise ValueError(f"Branch masks must be distinct, got {names}.")
        if parsed_masks and fusion == "tpw" and hidden_dim != embedding_dim:
            raise ValueError(
                "fusion='tpw' fuses the attention outputs with the embeddings, so "
                f"hidden_dim ({hidden_dim}) must equal embedding_dim ({embedding_dim})."
            )
        if parsed_masks and fusion == "mean" and hidden_dim != embedding_dim:
            raise ValueError("fusion='mean' needs hidden_dim == embedding_dim.")
        if parsed_masks and fusion == "tpw" and fusion_bias == "position" and not max_length:
            raise ValueError(
                "fusion_bias='position' (the paper's b_P) needs max_length; pass "
                "max_length=... or fusion_bias='shared'."
            )

        regularizer = keras.regularizers.L2(l2) if l2 else None
        dense_kwargs = {
            "kernel_initializer": "glorot_uniform",
            "bias_initializer": "zeros",
            "kernel_regularizer": regularizer,
        }

        # === Layers ===
        embedding = TokenEmbedding(
            vocabulary_size,
            embedding_dim,
            trainable_rows=trainable_embeddings,
            name="token_embedding",
        )
        embedding_dropout = keras.layers.Dropout(dropout, name="embedding_dropout")
        branches = []
        for name, mask in zip(names, parsed_masks):
            projection = keras.layers.Dense(
                hidden_dim,
                activation=branch_activation,
                name=f"{name}_projection",
                **dense_kwargs,
            )
            attention = MaskedSelfAttention(
                mask=mask,
                compatibility=compatibility,
                activation=compatibility_activation,
                scale=scale,
                faraway_rule=faraway_rule,
                name=f"{name}_attention",
                **dense_kwargs,
            )
            gate = FusionGate(name=f"{name}_fusion_gate", **dense_kwargs) if fusion == "gate" else None
            branches.append((name, projection, attention, gate))
        fusion_layer = None
        if parsed_masks and fusion == "tpw":
            fusion_layer = PositionFusion(
                bias=fusion_bias,
                max_length=max_length,
                name="position_fusion",
                **dense_kwargs,
            )
        fused_dropout = keras.layers.Dropout(dropout, name="fused_dropout")
        pool = None
        if pooling == "multi_dimensional":
            pool = MultiDimensionalAttention(
                activation=pooling_activation, name="pooling", **dense_kwargs
            )
        head_layers = []
        if head_units:
            head_layers.append(keras.layers.Dropout(dropout, name="head_dropout"))
            head_layers.append(
                keras.layers.Dense(
                    head_units, activation=head_activation, name="head_dense", **dense_kwargs
                )
            )
        head_layers.append(keras.layers.Dropout(dropout, name="logits_dropout"))
        logits_layer = keras.layers.Dense(
            num_classes, name="logits", dtype="float32", **dense_kwargs
        )

        layers = {
            "embedding": embedding,
            "embedding_dropout": embedding_dropout,
            "branches": branches,
            "fusion": fusion_layer,
            "fusion_kind": fusion,
            "fused_dropout": fused_dropout,
            "pool": pool,
            "head": head_layers,
            "logits": logits_layer,
        }

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        logits = _forward(layers, token_ids)
        super().__init__(inputs=token_ids, outputs=logits, **kwargs)

        # === Config ===
        self._layers_by_role = layers
        self.vocabulary_size = vocabulary_size
        self.num_classes = num_classes
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.branch_masks = [
            m if isinstance(m, str) else keras.saving.serialize_keras_object(m)
            for m in branch_masks
        ]
        self.faraway_rule = faraway_rule
        self.branch_activation = branch_activation
        self.compatibility = compatibility
        self.compatibility_activation = compatibility_activation
        self.scale = scale
        self.fusion = fusion
        self.fusion_bias = fusion_bias
        self.max_length = max_length
        self.pooling = pooling
        self.pooling_activation = pooling_activation
        self.head_units = head_units
        self.head_activation = head_activation
        self.dropout = dropout
        self.l2 = l2
        self.trainable_embeddings = trainable_embeddings

    @property
    def embedding(self):
        """The ``TokenEmbedding`` layer (load vectors with ``set_pretrained``)."""
        return self._layers_by_role["embedding"]

    @property
    def branch_names(self):
        return [b[0] for b in self._layers_by_role["branches"]]

    def attention_maps(self, token_ids):
        """Attention weights of every branch and of the pooling, for inspection.

        Returns a dict of numpy arrays: ``<branch>`` -> (batch, n, n) (for the
        M-D compatibility, averaged over features) and ``pooling`` ->
        (batch, n), the pooling weights averaged over features.
        """
        token_ids = ops.convert_to_tensor(token_ids, dtype="int32")
        collected = {}
        _forward(self._layers_by_role, token_ids, collect=collected)
        result = {}
        for name, weights in collected.items():
            weights = ops.convert_to_numpy(ops.cast(weights, "float32"))
            if weights.ndim == 4 or (name == "pooling" and weights.ndim == 3):
                weights = weights.mean(axis=-1)
            result[name] = weights
        return result

    def get_config(self):
        return {
            "vocabulary_size": self.vocabulary_size,
            "num_classes": self.num_classes,
            "embedding_dim": self.embedding_dim,
            "hidden_dim": self.hidden_dim,
            "branch_masks": list(self.branch_masks),
            "faraway_rule": self.faraway_rule,
            "branch_activation": self.branch_activation,
            "compatibility": self.compatibility,
            "compatibility_activation": self.compatibility_activation,
            "scale": self.scale,
            "fusion": self.fusion,
            "fusion_bias": self.fusion_bias,
            "max_length": self.max_length,
            "pooling": self.pooling,
            "pooling_activation": self.pooling_activation,
            "head_units": self.head_units,
            "head_activation": self.head_activation,
            "dropout": self.dropout,
            "l2": self.l2,
            "trainable_embeddings": self.trainable_embeddings,
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _forward(layers, token_ids, collect=None, training=None):
    """MPSAN's computation, shared by the functional graph and inspection.

    With ``collect`` (a dict), attention weights are stored in it by branch
    name and under ``"pooling"``.
    """
    padding = ops.not_equal(token_ids, 0)
    w = layers["embedding"](token_ids)
    w = layers["embedding_dropout"](w, training=training)
    sources = []
    for name, projection, attention, gate in layers["branches"]:
        h = projection(w)
        if collect is not None:
            s, weights = attention(
                h, mask=padding, return_attention_scores=True, training=training
            )
            collect[name] = weights
        else:
            s = attention(h, mask=padding, training=training)
        if gate is not None:
            s = gate([s, h], mask=[padding, padding])
        sources.append(s)

    fusion = layers["fusion_kind"]
    if not sources:
        x = w
    elif fusion == "tpw":
        x = layers["fusion"](sources + [w], mask=[padding] * (len(sources) + 1))
    elif fusion == "gate":
        x = sources[0] if len(sources) == 1 else keras.layers.Concatenate(axis=-1)(sources)
    else:  # mean
        x = sum(sources[1:], sources[0]) + w
        x = x / float(len(sources) + 1)
    x = layers["fused_dropout"](x, training=training)

    if layers["pool"] is not None:
        if collect is not None:
            pooled, weights = layers["pool"](
                x, mask=padding, return_attention_scores=True
            )
            collect["pooling"] = weights
        else:
            pooled = layers["pool"](x, mask=padding)
    else:
        pooled = _masked_mean(x, padding)
    for layer in layers["head"]:
        pooled = layer(pooled, training=training)
    return layers["logits"](pooled)


def _masked_mean(x, padding):
    m = ops.cast(ops.expand_dims(padding, -1), x.dtype)
    total = ops.sum(x * m, axis=1)
    count = ops.maximum(ops.sum(m, axis=1), ops.cast(1.0, x.dtype))
    return total / count
