"""HAN written from stock Keras: the reference the zoo's ``han`` preset is timed against.

A functional model of ``keras.layers`` (Embedding, Bidirectional GRU, Dense,
Softmax, Dropout) and ``keras.ops``, computing what
``keras_posattn.models.han.HAN`` computes on token ids (batch, S, W):

- the sentences are folded into the batch, (batch * S, W), by a two-line
  ``Layer`` (stock ``Reshape`` keeps the batch axis; ``TimeDistributed`` over a
  dynamic sentence axis maps the encoder sentence by sentence), and unfolded
  back, (batch, S, 2 units), after the word level;
- word level: embedding, ``Bidirectional(GRU(units))`` with the word padding
  mask, and the context attention ``u = tanh(W h + b)`` (a ``Dense``), one
  logit per word ``u . u_w`` (a bias-free ``Dense(1)`` whose kernel is the
  context vector), stock ``Softmax`` masking over the words (an all-padding
  sentence gets all-zero weights, so a zero vector), ``sum_t alpha_t h_t``;
- sentence level: the same over the sentence vectors with the mask "the
  sentence has a word";
- dropout and the logits ``Dense``.

Stock MultiHeadAttention does not fit: HAN's attention has one learned
context vector as its query and a tanh MLP for keys. Weights are copied by
``transfer``: the embedding table (``TokenEmbedding.table()``), the two
Bi-GRUs (same names), each ``ContextAttention``'s ``kernel``/``bias`` into
``<level>_attention_hidden`` and its ``context`` (as a (units, 1) kernel)
into ``<level>_attention_score``, the head's logits layer into ``head_logits``.

Every preset of ``zoo/han.toml`` is supported. ``trainable_embeddings="oov"``
trains the whole table.
"""

import keras
from keras import ops

from . import copy_embedding
from . import copy_head
from . import embedding
from . import head
from . import register


class FoldSentences(keras.layers.Layer):
    """(batch, S, W, ...) -> (batch * S, W, ...): a reshape read at run time."""

    def call(self, inputs):
        shape = ops.shape(inputs)
        return ops.reshape(inputs, (-1, *shape[2:]))


class UnfoldSentences(keras.layers.Layer):
    """(batch * S, ...) -> (batch, S, ...), with (batch, S) read from ``like``."""

    def call(self, inputs, like):
        shape = ops.shape(like)
        return ops.reshape(inputs, (shape[0], shape[1], *inputs.shape[1:]))


def context_attention(h, mask, units, name):
    """``sum_t softmax_t(tanh(W h_t + b) . u_w) h_t`` over the real positions."""
    u = keras.layers.Dense(units, activation="tanh", name=f"{name}_hidden")(h)
    scores = keras.layers.Dense(1, use_bias=False, name=f"{name}_score")(u)
    alpha = keras.layers.Softmax(axis=-1)(ops.squeeze(scores, -1), mask=mask)
    return ops.sum(ops.expand_dims(alpha, -1) * h, axis=1)


@register("han")
def build(config):
    """A stock-Keras HAN for ``config`` (``HAN.get_config()``), and its ``transfer``."""
    units = int(config["units"])
    attention_units = int(config["attention_units"])

    token_ids = keras.Input(shape=(None, None), dtype="int32", name="token_ids")
    words = FoldSentences(name="fold_sentences")(token_ids)  # (batch * S, W)
    word_mask = ops.not_equal(words, 0)
    x = embedding(config)(words)
    h = keras.layers.Bidirectional(keras.layers.GRU(units, return_sequences=True),
                                   name="word_bigru")(x, mask=word_mask)
    sentences = context_attention(h, word_mask, attention_units, "word_attention")
    sentences = UnfoldSentences(name="unfold_sentences")(sentences, token_ids)
    sentence_mask = ops.any(ops.not_equal(token_ids, 0), axis=-1)
    h = keras.layers.Bidirectional(keras.layers.GRU(units, return_sequences=True),
                                   name="sentence_bigru")(sentences, mask=sentence_mask)
    document = context_attention(h, sentence_mask, attention_units, "sentence_attention")
    logits = head(document, int(config["num_classes"]), dropout=config["dropout"])
    reference = keras.Model(token_ids, logits, name="han_reference")

    def transfer(ours, ref):
        """Copy ``ours`` (a zoo HAN) into ``ref`` (the model above)."""
        copy_embedding(ours, ref)
        for level in ("word", "sentence"):
            ref.get_layer(f"{level}_bigru").set_weights(
                ours.get_layer(f"{level}_bigru").get_weights())
            attention = ours.get_layer(f"{level}_attention")
            ref.get_layer(f"{level}_attention_hidden").set_weights(
                [attention.kernel.numpy(), attention.bias.numpy()])
            ref.get_layer(f"{level}_attention_score").set_weights(
                [attention.context.numpy()[:, None]])
        copy_head(ours, ref)

    return reference, transfer
