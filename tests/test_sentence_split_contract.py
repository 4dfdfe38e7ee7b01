"""The hierarchical models' sentence boundaries, as the public
``DocumentPreprocessor`` gives them: every boundary the README promises
(``.``, ``!`` and ``?`` before white space, line breaks, ``<br />``) splits a
document into that many sentences, and nothing else does.

Asserted on the token ids the models read (one row per sentence), not on the
splitter's internals, so a boundary dropped anywhere on the way fails here.
"""

import numpy as np
import pytest

from keras_posattn.preprocessing import DocumentPreprocessor

WORDS = "why because stop go end next one two three here there it rains".split()


def sentence_count(text):
    """Sentences with a word in ``text`` once preprocessed."""
    pre = DocumentPreprocessor.from_texts([" ".join(WORDS)], max_sentences=8, max_length=8)
    ids = np.asarray(pre([text]))[0]
    return int((ids != 0).any(axis=-1).sum())


@pytest.mark.parametrize("text, count", [
    ("Why? Because.", 2),
    ("Why?? Because", 2),
    ("Stop! Go.", 2),
    ("Stop!! Go", 2),
    ("End. Next", 2),
    ("End... next", 2),
    ('"Why?" it rains', 2),
    ("one\ntwo\r\nthree", 3),
    ("one<br />two<BR>three", 3),
    ("one. two! three? here", 4),
])
def test_each_documented_boundary_ends_a_sentence(text, count):
    assert sentence_count(text) == count


@pytest.mark.parametrize("text", ["why because", "here,there", "one-two three", "end.next"])
def test_no_boundary_no_split(text):
    """Words, commas, dashes and a full stop inside a token do not split."""
    assert sentence_count(text) == 1


def test_questions_and_answers_reach_the_model_as_separate_rows():
    """"Why? Because." is two sentences of one word each: "why" and "because"
    on their own rows, in order."""
    pre = DocumentPreprocessor.from_texts(["why because"], max_sentences=4)
    ids = np.asarray(pre(["Why? Because."]))[0]
    rows = [row[row != 0].tolist() for row in ids if (row != 0).any()]
    vocabulary = list(pre.vocabulary)
    assert rows == [[vocabulary.index("why")], [vocabulary.index("because")]]
