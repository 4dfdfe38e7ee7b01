"""Positional masks against the MPSAN paper's formulas (8)-(12).

The paper writes M_ij with i the KEY and j the QUERY (p(z = i | h_j)); this
library's matrices are [query, key]. The references below are written in the
paper's indices and transposed once, in ``paper_matrix``.
"""

import math

import keras
import numpy as np
import pytest

from keras_posattn import masks

LENGTHS = [1, 2, 5, 9]
NEG_INF = -np.inf


def paper_matrix(entry, n):
    """Build M in the library's [query, key] layout from ``entry(i, j)``.

    ``entry`` takes the paper's indices: i = key, j = query.
    """
    out = np.zeros((n, n))
    for j in range(n):  # query
        for i in range(n):  # key
            out[j, i] = entry(i, j)
    return out


# --- the paper's formulas, value 0 (allowed / no penalty) or -inf (blocked) ---


def faraway_paper(m):  # eq. 8
    return lambda i, j: 0.0 if (abs(i - j) <= m and i != j) else NEG_INF


def faraway_released(m):  # the authors' code: |i - j| < m
    return lambda i, j: 0.0 if (abs(i - j) < m and i != j) else NEG_INF


def backward(i, j):  # eq. 9
    return 0.0 if i < j else NEG_INF


def forward(i, j):  # eq. 10
    return 0.0 if i > j else NEG_INF


def distance(i, j):  # eq. 11
    return -abs(i - j) if i != j else 0.0


def scaled_distance(i, j):  # eq. 12
    return -math.log(abs(i - j)) if i != j else 0.0


def library_matrices(mask, n):
    allowed, penalty = mask.matrices(n)
    allowed = None if allowed is None else keras.ops.convert_to_numpy(allowed)
    penalty = None if penalty is None else keras.ops.convert_to_numpy(penalty)
    return allowed, penalty


def as_additive(mask, n):
    """The library mask as the paper's single additive matrix (-inf = blocked)."""
    allowed, penalty = library_matrices(mask, n)
    total = np.zeros((n, n)) if penalty is None else penalty.astype("float64")
    if allowed is not None:
        assert allowed.dtype == bool
        total = np.where(allowed, total, NEG_INF)
    return total


def assert_same_mask(mask, reference, n):
    np.testing.assert_allclose(as_additive(mask, n), reference, rtol=0, atol=1e-6)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("m", [1, 2, 3])
def test_faraway_paper_rule(n, m):
    assert_same_mask(masks.Faraway(m), paper_matrix(faraway_paper(m), n), n)
    assert_same_mask(
        masks.Faraway(m, rule="paper"), paper_matrix(faraway_paper(m), n), n
    )


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("m", [2, 3])
def test_faraway_released_rule(n, m):
    mask = masks.Faraway(m, rule="released")
    assert_same_mask(mask, paper_matrix(faraway_released(m), n), n)


def test_faraway_released_radius_one_is_an_error():
    # |q - k| < 1 leaves only the query itself, which Faraway blocks: every
    # key of every query would be blocked.
    assert np.all(np.isneginf(paper_matrix(faraway_released(1), 6)))
    with pytest.raises(ValueError, match="every key would be blocked"):
        masks.Faraway(1, rule="released")
    with pytest.raises(ValueError, match="every key would be blocked"):
        masks.parse("fa1", faraway_rule="released")
    masks.Faraway(1)  # the paper's rule: |q - k| <= 1 is fine


@pytest.mark.parametrize("n", LENGTHS)
def test_backward_forward(n):
    assert_same_mask(masks.Backward(), paper_matrix(backward, n), n)
    assert_same_mask(masks.Forward(), paper_matrix(forward, n), n)
    # Blocking-only masks add no penalty.
    assert library_matrices(masks.Backward(), n)[1] is None
    assert library_matrices(masks.Forward(), n)[1] is None


@pytest.mark.parametrize("n", LENGTHS)
def test_distance_and_scaled_distance(n):
    for mask, entry in [(masks.Distance(), distance), (masks.ScaledDistance(), scaled_distance)]:
        allowed, penalty = library_matrices(mask, n)
        assert allowed is None  # penalties never block
        assert penalty.dtype == np.float32
        assert penalty.shape == (n, n)
        np.testing.assert_allclose(penalty, paper_matrix(entry, n), rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(np.diag(penalty), np.zeros(n))


@pytest.mark.parametrize("n", LENGTHS)
def test_composition_backward_plus_scaled_distance(n):
    mask = masks.Backward() + masks.ScaledDistance()
    assert isinstance(mask, masks.CompositeMask)
    reference = paper_matrix(lambda i, j: backward(i, j) + scaled_distance(i, j), n)
    assert_same_mask(mask, reference, n)
    allowed, penalty = library_matrices(mask, n)
    np.testing.assert_array_equal(allowed, np.isfinite(paper_matrix(backward, n)))
    np.testing.assert_allclose(penalty, paper_matrix(scaled_distance, n), atol=1e-6)


@pytest.mark.parametrize("n", LENGTHS)
def test_composition_allowed_and_penalties_add(n):
    # Two blocking masks combine with AND, two penalties add.
    mask = masks.Faraway(3) + masks.Backward() + masks.Distance() + masks.ScaledDistance()
    reference = paper_matrix(
        lambda i, j: faraway_paper(3)(i, j)
        + backward(i, j)
        + distance(i, j)
        + scaled_distance(i, j),
        n,
    )
    assert_same_mask(mask, reference, n)
    # Forward + Backward allows nothing at all.
    allowed, _ = library_matrices(masks.Forward() + masks.Backward(), n)
    assert not allowed.any()


def test_nested_sums_flatten():
    a, b, c = masks.Faraway(2), masks.Backward(), masks.ScaledDistance()
    left = (a + b) + c
    right = a + (b + c)
    assert isinstance(left, masks.CompositeMask)
    assert left.masks == [a, b, c]
    assert right.masks == [a, b, c]
    assert left == right
    assert not any(isinstance(m, masks.CompositeMask) for m in left.masks)


def test_radius():
    assert masks.Faraway(2).radius == 2
    assert masks.Faraway(3, rule="released").radius == 2
    assert masks.Backward().radius is None
    assert masks.ScaledDistance().radius is None
    assert (masks.Backward() + masks.ScaledDistance()).radius is None
    assert (masks.Faraway(3) + masks.ScaledDistance()).radius == 3
    assert (masks.Faraway(3) + masks.Faraway(2)).radius == 2
    # The radius bounds the allowed band.
    for mask in [masks.Faraway(2), masks.Faraway(3, rule="released")]:
        allowed, _ = library_matrices(mask, 9)
        q, k = np.nonzero(allowed)
        assert np.abs(q - k).max() == mask.radius


def test_add_non_mask_is_type_error():
    with pytest.raises(TypeError):
        masks.Backward() + 1


def test_invalid_faraway():
    with pytest.raises(ValueError):
        masks.Faraway(0)
    with pytest.raises(ValueError):
        masks.Faraway(2, rule="other")


# --- direction, in words ---


def test_backward_third_token_sees_first_and_second_only():
    allowed, _ = library_matrices(masks.Backward(), 5)
    # Under Backward the 3rd token attends to tokens 1 and 2 only.
    np.testing.assert_array_equal(allowed[2], [True, True, False, False, False])
    # The 1st token sees nothing.
    assert not allowed[0].any()
    # The last token sees every earlier token.
    np.testing.assert_array_equal(allowed[4], [True, True, True, True, False])


def test_forward_third_token_sees_fourth_and_fifth_only():
    allowed, _ = library_matrices(masks.Forward(), 5)
    # Under Forward the 3rd token attends to tokens 4 and 5 only.
    np.testing.assert_array_equal(allowed[2], [False, False, False, True, True])
    # The last token sees nothing; the first sees all the others.
    assert not allowed[4].any()
    np.testing.assert_array_equal(allowed[0], [False, True, True, True, True])


def test_faraway_fifth_token_window():
    # Under FA(2) (paper rule) the 5th token of 9 attends to tokens 3, 4, 6, 7.
    allowed, _ = library_matrices(masks.Faraway(2), 9)
    assert [k + 1 for k in np.flatnonzero(allowed[4])] == [3, 4, 6, 7]
    # Under the released rule FA(2) it attends to tokens 4 and 6 only.
    allowed, _ = library_matrices(masks.Faraway(2, rule="released"), 9)
    assert [k + 1 for k in np.flatnonzero(allowed[4])] == [4, 6]


def test_scaled_distance_penalises_far_keys_more():
    _, penalty = library_matrices(masks.ScaledDistance(), 6)
    # For the 1st token, the 2nd is not penalised (log 1), the 3rd by log 2 ...
    np.testing.assert_allclose(penalty[0], [0, 0, -np.log(2), -np.log(3), -np.log(4), -np.log(5)], atol=1e-6)


def test_rectangular_matrices():
    allowed, penalty = (keras.ops.convert_to_numpy(x) for x in
                        (masks.Backward() + masks.Distance()).matrices(3, 5))
    assert allowed.shape == (3, 5) and penalty.shape == (3, 5)
    np.testing.assert_array_equal(allowed[2], [True, True, False, False, False])


# --- parse / short_name ---


@pytest.mark.parametrize(
    "name, expected",
    [
        ("fa2", masks.Faraway(2)),
        ("fa3", masks.Faraway(3)),
        ("bw", masks.Backward()),
        ("fw", masks.Forward()),
        ("d", masks.Distance()),
        ("sd", masks.ScaledDistance()),
        ("bw+sd", masks.Backward() + masks.ScaledDistance()),
        ("fw+d", masks.Forward() + masks.Distance()),
        ("fa2+sd", masks.Faraway(2) + masks.ScaledDistance()),
    ],
)
def test_parse_and_short_name_round_trip(name, expected):
    parsed = masks.parse(name)
    assert parsed == expected
    assert masks.short_name(parsed) == name
    assert masks.parse(masks.short_name(expected)) == expected


def test_parse_variants():
    assert masks.parse(None) is None
    assert masks.parse("none") is None
    assert masks.parse("") is None
    assert masks.short_name(None) == "none"
    assert masks.parse(" BW + SD ") == masks.Backward() + masks.ScaledDistance()
    released = masks.parse("fa3+sd", faraway_rule="released")
    assert released.masks[0] == masks.Faraway(3, rule="released")
    assert released.masks[0] != masks.Faraway(3)
    obj = masks.Forward()
    assert masks.parse(obj) is obj
    config = keras.saving.serialize_keras_object(masks.Faraway(2))
    assert masks.parse(config) == masks.Faraway(2)


@pytest.mark.parametrize("bad", ["xyz", "bw+foo", "fa", "fa+sd", "backward"])
def test_parse_error_lists_known_names(bad):
    with pytest.raises(ValueError) as info:
        masks.parse(bad)
    message = str(info.value)
    for known in ["fa<m>", "bw", "fw", "sd", "none"]:
        assert known in message


# --- serialisation and equality ---


@pytest.mark.parametrize(
    "mask",
    [
        masks.Faraway(2),
        masks.Faraway(3, rule="released"),
        masks.Backward(),
        masks.Forward(),
        masks.Distance(),
        masks.ScaledDistance(),
        masks.Backward() + masks.ScaledDistance(),
        masks.Faraway(2) + masks.Forward() + masks.Distance(),
    ],
)
def test_serialize_deserialize(mask):
    config = keras.saving.serialize_keras_object(mask)
    restored = keras.saving.deserialize_keras_object(config)
    assert type(restored) is type(mask)
    assert restored == mask
    assert hash(restored) == hash(mask)
    np.testing.assert_array_equal(as_additive(restored, 7), as_additive(mask, 7))
    # Also through safe mode (as load_model uses it).
    restored = keras.saving.deserialize_keras_object(config, safe_mode=True)
    assert restored == mask


def test_equality():
    assert masks.Faraway(2) == masks.Faraway(2)
    assert masks.Faraway(2) != masks.Faraway(3)
    assert masks.Faraway(2) != masks.Faraway(2, rule="released")
    assert masks.Backward() != masks.Forward()
    assert masks.Backward() + masks.ScaledDistance() == masks.Backward() + masks.ScaledDistance()
    assert len({masks.Backward(), masks.Backward(), masks.Forward()}) == 2
    assert repr(masks.Faraway(2)) == "Faraway(m=2, rule='paper')"
