"""DiSAN (Shen et al., AAAI-18) from stock Keras, for ``keras_posattn.models.disan``.

The same function as the zoo's ``DiSAN``: per direction (DiSAN's "forward",
a query sees earlier tokens: ``j < i``; "backward": ``j > i``) a ``Dropout``
and ``Dense(d, act)`` projection ``h``, multi-dimensional ``5 tanh(x / 5)``
self-attention with a dense (n, n) directional mask built per call
(``reference.mpsan.MaskedAttention``: stock ``Dense`` for ``W_1``, ``W_2``,
``b``, stock ``Softmax(axis=2)`` with the mask, weights times the mask), the
fusion gate as two ``Dense`` layers and a sigmoid, the two directions
concatenated, source2token pooling (``Dense``, ``Dense``, ``Softmax(axis=1)``
with the padding mask), and the head ``Dropout``, ``Dense(d, ReLU)``,
``Dropout``, bias-free logits. Dropout sits where ours has it: before each
projection, on the copy of ``h`` that feeds each compatibility, before the
pooling's two maps and the head's two layers. Every config value is
supported.
"""

import keras
from keras import ops

from . import assign
from . import copy_embedding
from . import copy_head
from . import copy_layer
from . import embedding
from . import head
from . import l2_factory
from . import register
from . import token_input
from .mpsan import MaskedAttention
from .mpsan import copy_attention
from .mpsan import copy_pooling
from .mpsan import multi_dimensional_pooling

#: DiSAN's direction -> the mask of what its query sees.
DIRECTIONS = {"forward": "bw", "backward": "fw"}


@register("disan")
def build(config):
    c = dict(config)
    d = c["embedding_dim"] if c.get("hidden_dim") is None else int(c["hidden_dim"])
    rate = float(c["dropout"])
    regularizer = l2_factory(c["l2"] / 2.0)  # TF1's wd * sum(w^2) / 2

    ids = token_input()
    padding = ops.not_equal(ids, 0)
    x = embedding(c)(ids)
    fused = []
    for direction, mask in DIRECTIONS.items():
        dropped = keras.layers.Dropout(rate, name=f"{direction}_input_dropout")(x)
        h = keras.layers.Dense(d, activation=c["activation"], name=f"{direction}_projection",
                               kernel_regularizer=regularizer())(dropped)
        s = MaskedAttention(mask, compatibility="multi_dimensional", activation="scaled_tanh",
                            scale=c["scale"], compatibility_dropout=rate,
                            kernel_regularizer=regularizer(),
                            name=f"{direction}_attention")(h, padding=padding)
        gate = ops.sigmoid(
            keras.layers.Dense(d, use_bias=False, name=f"{direction}_gate_attention",
                               kernel_regularizer=regularizer())(s)
            + keras.layers.Dense(d, name=f"{direction}_gate_input",
                                 kernel_regularizer=regularizer())(h))
        fused.append(gate * h + (1.0 - gate) * s)
    u = keras.layers.Concatenate(name="concatenate")(fused)
    pooled = multi_dimensional_pooling(u, padding, c["activation"], regularizer, dropout=rate)
    logits = head(pooled, c["num_classes"], d if c.get("head_units") is None else c["head_units"],
                  c["head_activation"], rate, c["logits_bias"], regularizer)
    reference = keras.Model(ids, logits, name=f"reference_{c.get('name', 'disan')}")

    def transfer(ours, ref):
        copy_embedding(ours, ref)
        for direction in DIRECTIONS:
            copy_layer(ours.get_layer(f"{direction}_projection"),
                       ref.get_layer(f"{direction}_projection"))
            copy_attention(ours.get_layer(f"{direction}_attention"),
                           ref.get_layer(f"{direction}_attention"))
            gate = ours.get_layer(f"{direction}_fusion_gate")
            assign(ref.get_layer(f"{direction}_gate_attention").kernel, gate.attention_kernel)
            assign(ref.get_layer(f"{direction}_gate_input").kernel, gate.input_kernel)
            assign(ref.get_layer(f"{direction}_gate_input").bias, gate.bias)
        copy_pooling(ours.get_layer("pooling"), ref)
        copy_head(ours, ref)

    return reference, transfer
