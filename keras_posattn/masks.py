"""Positional masks: which keys a query may see, and how far keys are penalised.

A positional mask is a small, serialisable description of an (n_q, n_k) matrix
indexed ``[query, key]`` (row = the position that attends, column = the position
attended to). It has two parts:

- ``allowed``: a boolean matrix, ``True`` where the key may be attended to.
  Blocked keys get exactly zero attention weight.
- ``penalty``: a float matrix added to the attention logits (``<= 0``).

Masks compose with ``+``: blocking parts combine with AND, penalties add.
``Backward() + ScaledDistance()`` lets a query see only earlier keys, and
penalises them by ``log`` of their distance. This is the MPSAN paper's
``M_bw + M_sd`` (Dai et al., AAAI-20, eqs. 8-12).

In the paper's notation ``M_ij`` is indexed ``[key i, query j]``; here every
matrix is ``[query, key]``, the layout of attention weights in Keras.

The masks are data, not code paths: an attention layer asks a mask for its
``allowed`` and ``penalty`` matrices for a sequence length and never needs to
know which paper the mask came from. Matrices are computed in-graph from
position indices with ``keras.ops`` (no Python-side arrays per batch).

Example:

>>> from keras_posattn import masks
>>> m = masks.Backward() + masks.ScaledDistance()
>>> allowed, penalty = m.matrices(4)
"""

import keras
from keras import ops

_PACKAGE = "keras_posattn"


def _positions(n_queries, n_keys):
    """Query and key position grids of shape (n_q, 1) and (1, n_k), int32."""
    q = ops.expand_dims(ops.arange(n_queries, dtype="int32"), 1)
    k = ops.expand_dims(ops.arange(n_keys, dtype="int32"), 0)
    return q, k


class PositionalMask:
    """Base class of positional masks.

    Subclasses override ``allowed(q, k)`` (a boolean matrix, or ``None`` when
    the mask blocks nothing) and/or ``penalty(q, k)`` (a float32 matrix, or
    ``None`` when it adds nothing), where ``q`` and ``k`` are int32 position
    grids of shape (n_q, 1) and (1, n_k).
    """

    #: Largest |query - key| distance the mask allows, or None if unbounded.
    #: A banded attention implementation can use it to skip far keys.
    radius = None

    def allowed(self, q, k):
        return None

    def penalty(self, q, k):
        return None

    def matrices(self, n_queries, n_keys=None):
        """Return ``(allowed, penalty)`` for the given lengths.

        Either may be ``None``. ``allowed`` is bool (n_q, n_k); ``penalty`` is
        float32 (n_q, n_k).
        """
        n_keys = n_queries if n_keys is None else n_keys
        q, k = _positions(n_queries, n_keys)
        allowed = self.allowed(q, k)
        penalty = self.penalty(q, k)
        shape = (n_queries, n_keys)
        if allowed is not None:
            allowed = ops.broadcast_to(allowed, shape)
        if penalty is not None:
            penalty = ops.broadcast_to(penalty, shape)
        return allowed, penalty

    def __add__(self, other):
        if not isinstance(other, PositionalMask):
            return NotImplemented
        return CompositeMask([self, other])

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __eq__(self, other):
        return type(self) is type(other) and self.get_config() == other.get_config()

    def __hash__(self):
        return hash((type(self).__name__, repr(sorted(self.get_config().items()))))

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Faraway(PositionalMask):
    """Lets a query see its neighbours within distance ``m``, not itself.

    The paper's Faraway mask FA(m) (eq. 8): a key is allowed where
    ``|q - k| <= m`` and ``q != k``, a (2m+1)-gram window without its centre.
    The authors' released code uses ``|q - k| < m`` (a radius one smaller);
    ``rule="released"`` selects that.

    Args:
        m: int >= 1, the window radius (>= 2 with ``rule="released"``, where
            ``m = 1`` would block every key).
        rule: ``"paper"`` (``|q-k| <= m``, default) or ``"released"``
            (``|q-k| < m``).
    """

    def __init__(self, m, rule="paper"):
        m = int(m)
        if m < 1:
            raise ValueError(f"Faraway radius m must be >= 1, got {m}.")
        if rule not in ("paper", "released"):
            raise ValueError(
                f"Faraway rule must be 'paper' or 'released', got {rule!r}."
            )
        if rule == "released" and m < 2:
            raise ValueError(
                f"Faraway({m}, rule='released') allows keys with |q - k| < {m}, i.e. none "
                "but the query itself, which Faraway blocks: every key would be blocked. "
                "The released code's radii are 2 and 3."
            )
        self.m = m
        self.rule = rule

    @property
    def radius(self):
        return self.m if self.rule == "paper" else self.m - 1

    def allowed(self, q, k):
        distance = ops.abs(q - k)
        return ops.logical_and(distance <= self.radius, distance > 0)

    def get_config(self):
        return {"m": self.m, "rule": self.rule}


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Backward(PositionalMask):
    """Lets a query see only keys BEFORE it (``k < q``); itself blocked.

    The paper's Backward mask (eq. 9, written there as ``i < j`` with ``i`` the
    key and ``j`` the query). The first token of a sentence has no allowed key
    under this mask and gets a zero output. (DiSAN's code calls this direction
    "forward"; this library names masks by what a query may see.)
    """

    def allowed(self, q, k):
        return k < q


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Forward(PositionalMask):
    """Lets a query see only keys AFTER it (``k > q``); itself blocked.

    The paper's Forward mask (eq. 10). The last token of a sentence has no
    allowed key under this mask and gets a zero output.
    """

    def allowed(self, q, k):
        return k > q


@keras.saving.register_keras_serializable(package=_PACKAGE)
class Distance(PositionalMask):
    """Adds the penalty ``-|q - k|`` to every logit (0 on the diagonal).

    The paper's Distance mask (eq. 11, after Im & Cho 2017). Blocks nothing;
    meant to be added to a blocking mask (e.g. ``Backward() + Distance()``).
    """

    def penalty(self, q, k):
        return -ops.cast(ops.abs(q - k), "float32")


@keras.saving.register_keras_serializable(package=_PACKAGE)
class ScaledDistance(PositionalMask):
    """Adds the penalty ``-log|q - k|`` off the diagonal, 0 on it.

    The paper's Scaled-Distance mask (eq. 12): steep for near keys, flat for
    far ones. Blocks nothing; meant to be added to a blocking mask.
    """

    def penalty(self, q, k):
        distance = ops.cast(ops.abs(q - k), "float32")
        # log(1) = 0 gives the diagonal's 0 for free once distance 0 -> 1.
        return -ops.log(ops.maximum(distance, 1.0))


@keras.saving.register_keras_serializable(package=_PACKAGE)
class CompositeMask(PositionalMask):
    """The sum of several masks: blocking parts AND, penalties add.

    Made by ``mask_a + mask_b``; nested sums are flattened.

    Args:
        masks: list of ``PositionalMask`` (or their serialised configs).
    """

    def __init__(self, masks):
        flat = []
        for mask in masks:
            if isinstance(mask, dict):
                mask = keras.saving.deserialize_keras_object(mask)
            if isinstance(mask, CompositeMask):
                flat.extend(mask.masks)
            elif isinstance(mask, PositionalMask):
                flat.append(mask)
            else:
                raise TypeError(f"Not a PositionalMask: {mask!r}")
        if not flat:
            raise ValueError("CompositeMask needs at least one mask.")
        self.masks = flat

    @property
    def radius(self):
        radii = [m.radius for m in self.masks if m.radius is not None]
        return min(radii) if radii else None

    def allowed(self, q, k):
        result = None
        for mask in self.masks:
            allowed = mask.allowed(q, k)
            if allowed is None:
                continue
            result = allowed if result is None else ops.logical_and(result, allowed)
        return result

    def penalty(self, q, k):
        result = None
        for mask in self.masks:
            penalty = mask.penalty(q, k)
            if penalty is None:
                continue
            result = penalty if result is None else result + penalty
        return result

    def get_config(self):
        return {"masks": [keras.saving.serialize_keras_object(m) for m in self.masks]}

    def __repr__(self):
        return " + ".join(repr(m) for m in self.masks)


_SHORT_NAMES = {
    "fa": Faraway,
    "bw": Backward,
    "fw": Forward,
    "d": Distance,
    "sd": ScaledDistance,
}


def parse(spec, faraway_rule="paper"):
    """Turn a short mask name into a mask object.

    ``"fa2"`` → ``Faraway(2)``, ``"bw"`` → ``Backward()``, ``"fw+sd"`` →
    ``Forward() + ScaledDistance()``, ``"none"`` → ``None`` (no positional
    mask). Mask objects and serialised configs pass through unchanged.
    These short names are what presets in ``zoo/*.toml`` use.

    Args:
        spec: str, ``PositionalMask``, dict config, or None.
        faraway_rule: the ``rule`` given to every ``Faraway`` made here.
    """
    if spec is None or isinstance(spec, PositionalMask):
        return spec
    if isinstance(spec, dict):
        return keras.saving.deserialize_keras_object(spec)
    text = str(spec).strip().lower().replace(" ", "")
    if text in ("", "none"):
        return None
    parts = []
    for token in text.split("+"):
        if token.startswith("fa") and token[2:].isdigit():
            parts.append(Faraway(int(token[2:]), rule=faraway_rule))
        elif token in _SHORT_NAMES and token != "fa":
            parts.append(_SHORT_NAMES[token]())
        else:
            raise ValueError(
                f"Unknown mask {token!r} in {spec!r}. Known: fa<m> (e.g. fa2), "
                "bw, fw, d, sd, joined with '+' (e.g. 'bw+sd'), or 'none'."
            )
    return parts[0] if len(parts) == 1 else CompositeMask(parts)


def short_name(mask):
    """The inverse of ``parse`` for the built-in masks (``"bw+sd"``, ``"fa2"``)."""
    if mask is None:
        return "none"
    if isinstance(mask, CompositeMask):
        return "+".join(short_name(m) for m in mask.masks)
    if isinstance(mask, Faraway):
        return f"fa{mask.m}"
    for name, cls in _SHORT_NAMES.items():
        if type(mask) is cls:
            return name
    return type(mask).__name__.lower()
