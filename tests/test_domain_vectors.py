"""Tests for keras_posattn.domain_vectors (in-domain fastText vectors, issue 27).

Small generated corpora, 25d, few epochs: the whole file trains in seconds.
"""

import hashlib
import itertools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("gensim", reason="domain vectors need gensim (the 'domain' extra)")

from keras_posattn import domain_vectors as dv  # noqa: E402
from keras_posattn.datasets.readers import DataFormatError  # noqa: E402
from keras_posattn.domain_vectors import (  # noqa: E402
    DomainSpec,
    DomainVectors,
    combine_with,
    parse_spec,
    read_unlabeled,
    train_domain_vectors,
)
from keras_posattn.word_vectors import WordVectors, build_embedding_matrix  # noqa: E402

SMALL = DomainSpec(dim=25, epochs=3, bucket=20_000)


def make_corpus(n=1500, seed=0):
    """Two groups of made-up words, each group seen among its own context words.

    The words are random letter strings, so a group's members share contexts
    but (almost) no character n-grams: only training can bring them together.
    """
    rng = np.random.default_rng(seed)

    def word():
        return "".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), size=6))

    groups = [[word() for _ in range(5)] for _ in range(2)]
    contexts = [[word() for _ in range(30)] for _ in range(2)]
    texts = []
    for i in range(n):
        g = i % 2
        text = [str(w) for w in rng.choice(contexts[g], size=8)]
        text.insert(4, str(rng.choice(groups[g])))
        texts.append(text)
    return texts, groups


@pytest.fixture(scope="module")
def corpus():
    texts, groups = make_corpus()
    texts = texts + [["hapaxword", groups[0][0]]]  # one word seen once
    return texts, groups


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    texts, _ = corpus
    return train_domain_vectors(texts, SMALL, cache=False, progress=None)


# --- the spec -----------------------------------------------------------------


@pytest.mark.parametrize("text, method, dim, combine", [
    ("domain", "skipgram", 100, None),
    ("Domain-CBOW", "cbow", 100, None),
    ("domain-300d", "skipgram", 300, None),
    ("domain-skipgram-100d", "skipgram", 100, None),
    ("domain-sg-50d", "skipgram", 50, None),
    ("domain-cbow-300d", "cbow", 300, None),
    ("domain-skipgram-100d+glove-6b-50d", "skipgram", 100, "glove-6b-50d"),
    ("domain-cbow-200d+GloVe-6B-50d", "cbow", 200, "glove-6b-50d"),
    ("domain+vectors/my.txt", "skipgram", 100, "vectors/my.txt"),
])
def test_parse_spec_accepts(text, method, dim, combine):
    spec = parse_spec(text)
    assert (spec.method, spec.dim, spec.combine, spec.epochs) == (method, dim, combine, None)
    assert parse_spec(spec.name) == spec


def test_parse_spec_epochs():
    spec = parse_spec("domain-cbow-100d-20ep+glove-6b-50d")
    assert (spec.method, spec.dim, spec.epochs, spec.combine) == ("cbow", 100, 20, "glove-6b-50d")
    assert spec.name == "domain-cbow-100d-20ep+glove-6b-50d"
    assert parse_spec("domain-7ep").name == "domain-skipgram-100d-7ep"


def test_parse_spec_canonical_name():
    assert parse_spec("domain").name == "domain-skipgram-100d"
    assert parse_spec("domain-cbow-300d+glove-6b-50d").name == "domain-cbow-300d+glove-6b-50d"


@pytest.mark.parametrize("text", ["glove-6b-50d", "none", "", "vectors.txt", "domainx", None, 3])
def test_parse_spec_leaves_other_names(text):
    assert parse_spec(text) is None


def test_parse_spec_leaves_an_existing_file_called_domain(tmp_path, monkeypatch):
    (tmp_path / "domain-vectors.txt").write_text("a 1 2\n")
    monkeypatch.chdir(tmp_path)
    assert parse_spec("domain-vectors.txt") is None


@pytest.mark.parametrize("text, fragment", [
    ("domain-foo", "expected domain[-skipgram|-cbow][-<dim>d]"),
    ("domain-cbow-100", "expected domain[-skipgram|-cbow][-<dim>d]"),
    ("domain-100d-cbow", "expected domain[-skipgram|-cbow][-<dim>d]"),
    ("domain-skipgram-10d", "dimension 10 out of range, expected 25-600"),
    ("domain-1000d", "dimension 1000 out of range"),
    ("domain-100d+domain-cbow", "after '+' expected GloVe vectors"),
    ("domain+", "expected domain[-skipgram|-cbow]"),
    ("domain-100d-0ep", "0 epochs"),
    ("domain-100d-ep", "expected domain[-skipgram|-cbow]"),
])
def test_parse_spec_errors_are_one_line(text, fragment):
    with pytest.raises(ValueError) as err:
        parse_spec(text)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_domain_spec_validates():
    with pytest.raises(ValueError, match="out of range"):
        DomainSpec(dim=8)
    with pytest.raises(ValueError, match="unknown method"):
        DomainSpec(method="glove")
    with pytest.raises(ValueError, match="max_n"):
        DomainSpec(min_n=4, max_n=3)
    with pytest.raises(ValueError, match="epochs"):
        DomainSpec(epochs=0)
    assert DomainSpec(method="sg").method == "skipgram"


def test_gensim_kwargs():
    kwargs = parse_spec("domain-cbow-300d").resolved(10**7).gensim_kwargs()
    assert kwargs["sg"] == 0 and kwargs["vector_size"] == 300 and kwargs["epochs"] == 5
    assert (kwargs["min_n"], kwargs["max_n"]) == (3, 6)
    assert parse_spec("domain-3ep").gensim_kwargs()["sg"] == 1
    with pytest.raises(ValueError, match="resolve the epochs first"):
        parse_spec("domain").gensim_kwargs()


@pytest.mark.parametrize("tokens, epochs", [
    (18_000_000, 5), (6_000_000, 5), (2_500_000, 5), (1_080_000, 10), (600_000, 17),
    (122_000, 20), (44_000, 20), (10, 20),
])
def test_automatic_epochs(tokens, epochs):
    assert parse_spec("domain").resolved(tokens).epochs == epochs
    assert parse_spec("domain-9ep").resolved(tokens).epochs == 9


# --- training -----------------------------------------------------------------


def test_every_training_word_has_a_float32_row(corpus, trained):
    texts, _ = corpus
    assert isinstance(trained, DomainVectors) and isinstance(trained, WordVectors)
    assert trained.vectors.dtype == np.float32 and trained.dim == 25
    assert set(trained.words) == {w for t in texts for w in t}
    assert len(set(trained.words)) == len(trained.words)
    assert np.isfinite(trained.vectors).all()
    assert trained.name.startswith("domain-skipgram-25d-3ep (gensim ")
    assert f"{len(texts):,} texts + 0 unlabeled" in trained.name


def test_related_words_end_up_closer(corpus, trained):
    """Words that share contexts (and no n-grams) are closer than words that don't."""
    _, groups = corpus

    def cos(a, b):
        a, b = trained.vector(a), trained.vector(b)
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    intra = np.mean([cos(a, b) for g in groups for a, b in itertools.combinations(g, 2)])
    inter = np.mean([cos(a, b) for a in groups[0] for b in groups[1]])
    assert intra > 0.8 and inter < 0.5 and intra - inter > 0.4, (intra, inter)


def test_cbow_trains_too(corpus):
    texts, groups = corpus
    vectors = train_domain_vectors(texts, DomainSpec(method="cbow", dim=25, epochs=3,
                                                     bucket=20_000), cache=False, progress=None)
    a, b, c = (vectors.vector(w) for w in (groups[0][0], groups[0][1], groups[1][0]))
    a = a / np.linalg.norm(a)
    assert a @ b / np.linalg.norm(b) > a @ c / np.linalg.norm(c)
    assert vectors.info["method"] == "cbow"


def test_subword_vectors(corpus, trained):
    _, groups = corpus
    # a rare training word (seen once, below min_count=2) gets its subword vector
    row = trained.get("hapaxword")
    assert row is not None
    np.testing.assert_array_equal(row, trained.subword_vector("hapaxword"))
    # an unseen word sharing n-grams with trained words: non-zero, near its relatives
    unseen = groups[0][0] + "s"
    assert unseen not in trained
    vector = trained.vector(unseen)
    assert vector.shape == (25,) and np.linalg.norm(vector) > 0
    own = trained.vector(groups[0][0])
    assert vector @ own / np.linalg.norm(vector) / np.linalg.norm(own) > 0.5
    # no trained n-gram at all: the origin
    assert not np.any(trained.vector("\u4e00\u4e01"))


def test_empty_texts_are_refused():
    with pytest.raises(ValueError, match="every text is empty"):
        train_domain_vectors([[], []], SMALL, cache=False, progress=None)
    with pytest.raises(ValueError, match="no word occurs min_count=2"):
        train_domain_vectors([["a", "b"]], SMALL, cache=False, progress=None)
    with pytest.raises(ValueError, match="not a domain vectors spec"):
        train_domain_vectors([["a"]], "glove-6b-50d", cache=False)


def test_long_texts_are_fed_in_pieces():
    long_text = [f"w{i % 50}" for i in range(25_000)]
    pieces = dv._corpus([long_text, ["a", "b"]], [["c"]], seed=0)
    assert sorted(len(p) for p in pieces) == [1, 2, 5_000, 10_000, 10_000]
    assert sum(pieces, []).count("w7") == long_text.count("w7")


def test_progress_lines(corpus):
    texts, _ = corpus
    lines = []
    train_domain_vectors(texts[:200], SMALL, cache=False, progress=lines.append)
    assert lines[0].startswith("Domain vectors: training domain-skipgram-25d-3ep (3 epochs) on 200 texts")
    epochs = [line for line in lines if " epoch " in line]
    assert len(epochs) == 3
    assert epochs[-1].startswith("Domain vectors: epoch 3/3 (") and epochs[-1].endswith(" s)")


DETERMINISM_SCRIPT = textwrap.dedent("""
    import hashlib, sys
    sys.path.insert(0, {root!r})
    from keras_posattn import domain_vectors as dv
    texts = {texts!r}
    v = dv.train_domain_vectors(texts, dv.DomainSpec(dim=25, epochs=2, bucket=20000),
                                seed=7, cache=False, progress=None)
    digest = hashlib.sha256(repr(v.words).encode())
    digest.update(v.vectors.tobytes())
    digest.update(v._subwords["ngram_vectors"].tobytes())
    digest.update(v.vector("neverseenword").tobytes())
    print(digest.hexdigest())
""")


def test_same_seed_same_vectors_in_two_processes(corpus):
    texts, _ = corpus
    root = os.path.dirname(os.path.dirname(os.path.abspath(dv.__file__)))
    script = DETERMINISM_SCRIPT.format(root=root, texts=texts[:400])
    digests = []
    for hash_seed in ("1", "2"):  # different str hashes in each process
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        digests.append(out.stdout.strip().splitlines()[-1])
    assert digests[0] == digests[1]
    # ... and the same as in this process
    v = train_domain_vectors(texts[:400], DomainSpec(dim=25, epochs=2, bucket=20_000), seed=7,
                             cache=False, progress=None)
    digest = hashlib.sha256(repr(v.words).encode())
    for array in (v.vectors, v._subwords["ngram_vectors"], v.vector("neverseenword")):
        digest.update(array.tobytes())
    assert digest.hexdigest() == digests[0]
    other = train_domain_vectors(texts[:400], DomainSpec(dim=25, epochs=2, bucket=20_000),
                                 seed=8, cache=False, progress=None)
    assert not np.array_equal(other.vectors, v.vectors)


# --- the cache ------------------------------------------------------------------


def train_logged(texts, spec=SMALL, **kwargs):
    lines = []
    vectors = train_domain_vectors(texts, spec, progress=lines.append, **kwargs)
    trained = any(" epoch " in line for line in lines)
    loaded = any("loaded from the cache" in line for line in lines)
    assert trained != loaded, lines
    return vectors, ("trained" if trained else "loaded"), lines


def test_cache_hit_loads_without_training(corpus, tmp_path, monkeypatch):
    texts, _ = corpus
    first, how, _ = train_logged(texts, cache_dir=tmp_path)
    assert how == "trained" and not first.info["from_cache"]
    files = list(tmp_path.iterdir())
    assert [f.name for f in files] == [f"domain-skipgram-25d-{first.info['cache_key'][:16]}.npz"]

    def no_training(*args, **kwargs):
        raise AssertionError("trained although the cache holds the vectors")

    monkeypatch.setattr(dv, "_train", no_training)
    second, how, lines = train_logged(texts, cache_dir=tmp_path)
    assert how == "loaded" and second.info["from_cache"]
    assert str(files[0]) in lines[0]
    assert second.words == first.words and second.name == first.name
    np.testing.assert_array_equal(second.vectors, first.vectors)
    np.testing.assert_array_equal(second.vector("unseenword"), first.vector("unseenword"))
    assert {k: v for k, v in second.info.items() if k != "from_cache"} == \
        {k: v for k, v in first.info.items() if k != "from_cache"}


def test_cache_key_follows_texts_params_seed_and_unlabeled(corpus, tmp_path):
    texts, _ = corpus
    texts = texts[:300]
    base, how, _ = train_logged(texts, cache_dir=tmp_path)
    assert how == "trained"
    changed_token = [list(t) for t in texts]
    changed_token[5][0] = changed_token[5][0] + "x"
    moved_boundary = [texts[0] + texts[1]] + texts[2:]
    variants = [
        dict(texts=changed_token),
        dict(texts=moved_boundary),
        dict(spec=DomainSpec(dim=25, epochs=4, bucket=20_000)),
        dict(spec=DomainSpec(dim=25, epochs=3, bucket=20_000, window=3)),
        dict(spec=DomainSpec(dim=25, epochs=3, bucket=20_000, method="cbow")),
        dict(seed=99),
        dict(unlabeled_token_lists=[["more", "text", "here"]]),
    ]
    keys = {base.info["cache_key"]}
    for variant in variants:
        kwargs = dict(texts=texts, cache_dir=tmp_path)
        kwargs.update(variant)
        vectors, how, _ = train_logged(kwargs.pop("texts"), **kwargs)
        assert how == "trained", variant
        keys.add(vectors.info["cache_key"])
    assert len(keys) == len(variants) + 1
    # and the original is still a hit
    assert train_logged(texts, cache_dir=tmp_path)[1] == "loaded"


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong key"])
def test_corrupted_cache_is_discarded_and_retrained(corpus, tmp_path, damage):
    texts, _ = corpus
    texts = texts[:300]
    first, _, _ = train_logged(texts, cache_dir=tmp_path)
    path = tmp_path / os.path.basename(first.info["cache_file"])
    if damage == "garbage":
        path.write_bytes(b"not a numpy file")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:1000])
    else:  # a valid file of other vectors under this name
        other = train_domain_vectors(texts[:100], SMALL, cache_dir=tmp_path / "o", progress=None)
        path.write_bytes(open(other.info["cache_file"], "rb").read())
    with pytest.warns(UserWarning, match="discarding the unreadable cache file"):
        again, how, _ = train_logged(texts, cache_dir=tmp_path)
    assert how == "trained"
    np.testing.assert_array_equal(again.vectors, first.vectors)
    assert train_logged(texts, cache_dir=tmp_path)[1] == "loaded"  # rewritten, whole


def test_cache_write_is_atomic_and_optional(corpus, tmp_path):
    texts, _ = corpus
    vectors, _, _ = train_logged(texts[:200], cache_dir=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [os.path.basename(vectors.info["cache_file"])]
    uncached = train_domain_vectors(texts[:200], SMALL, cache_dir=tmp_path / "none",
                                    cache=False, progress=None)
    assert not (tmp_path / "none").exists() and uncached.info["cache_file"] is None


def test_default_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_POSATTN_CACHE", str(tmp_path))
    assert dv.default_cache_dir() == tmp_path / "domain_vectors"
    monkeypatch.delenv("KERAS_POSATTN_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert dv.default_cache_dir() == tmp_path / "xdg" / "keras_posattn" / "domain_vectors"


def test_content_hash_is_unambiguous():
    assert dv.content_hash([["ab"]])[0] != dv.content_hash([["a", "b"]])[0]
    assert dv.content_hash([["a"], ["b"]])[0] != dv.content_hash([["a", "b"]])[0]
    assert dv.content_hash([["a"], ["b"]])[1:] == (2, 2)


# --- GloVe concatenation and metadata -------------------------------------------------


@pytest.fixture
def glove(corpus):
    _, groups = corpus
    word = groups[0][0]
    return WordVectors(words=[word, "hapaxword".upper(), "onlyinglove"],
                       vectors=np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], np.float32),
                       name="tiny-glove")


def test_combine_with_concatenates_and_fills_zeros(corpus, trained, glove):
    _, groups = corpus
    both = combine_with(trained, glove)
    assert both.dim == 28 and both.domain_dim == 25 and both.vectors.shape == (len(trained), 28)
    assert both.words == trained.words and "onlyinglove" not in both
    np.testing.assert_array_equal(both.vectors[:, :25], trained.vectors)
    row = both.index[groups[0][0]]
    np.testing.assert_array_equal(both.vectors[row, 25:], [1, 2, 3])
    missing = both.index[groups[1][0]]
    np.testing.assert_array_equal(both.vectors[missing, 25:], 0)
    # unseen word: subword domain part, GloVe part by exact or lowercase match
    np.testing.assert_array_equal(both.vector("onlyinglove")[25:], [7, 8, 9])
    np.testing.assert_array_equal(both.vector("OnlyInGlove")[25:], [7, 8, 9])
    np.testing.assert_array_equal(both.vector("onlyinglove")[:25], trained.vector("onlyinglove"))
    info = dv.metadata(both)
    assert info["spec"] == "domain-skipgram-25d-3ep+tiny-glove" and info["dim"] == 28
    assert info["combined_with"] == "tiny-glove" and info["combined_coverage"] == pytest.approx(
        1 / len(trained), abs=1e-4)
    with pytest.raises(ValueError, match="already combined"):
        combine_with(both, glove)


def test_spec_with_a_glove_file(corpus, tmp_path):
    texts, groups = corpus
    path = tmp_path / "g.txt"
    path.write_text(f"{groups[0][1]} 0.5 0.5\n")
    lines = []
    vectors = train_domain_vectors(texts[:300], f"domain-skipgram-25d+{path}",
                                   cache_dir=tmp_path / "c", progress=lines.append)
    assert vectors.dim == 27 and "concatenated g.txt (2d)" in lines[-1]
    assert vectors.name.startswith("domain-skipgram-25d+g.txt (gensim ")


def test_embedding_matrix_from_domain_vectors(corpus, trained):
    """build_embedding_matrix covers the whole training vocabulary."""
    texts, _ = corpus
    vocab = ["", "[UNK]"] + sorted({w for t in texts for w in t})
    init = build_embedding_matrix(vocab, trained)
    assert init.coverage == 1.0 and init.matrix.shape == (len(vocab), 25)


def test_metadata(trained):
    info = dv.metadata(trained)
    json.dumps(info)
    for key in ("spec", "method", "dim", "domain_dim", "library", "library_version", "texts",
                "unlabeled_texts", "tokens", "words", "trained_words", "seed", "workers",
                "params", "content_sha256", "cache_key", "from_cache", "train_seconds"):
        assert key in info, key
    assert info["library"] == "gensim" and info["params"]["min_n"] == 3
    assert info["words"] == len(trained) and info["trained_words"] < info["words"]
    assert dv.metadata("domain-cbow-300d+glove-6b-50d") == {
        "spec": "domain-cbow-300d+glove-6b-50d", "method": "cbow", "dim": 300,
        "library": "gensim", "params": parse_spec("domain-cbow-300d").training_params(),
        "combined_with": "glove-6b-50d"}


def test_missing_gensim_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gensim", None)
    with pytest.raises(ImportError, match=r"keras-posattn\[domain\]"):
        train_domain_vectors([["a", "a"]], SMALL, cache=False)


# --- unlabeled texts ----------------------------------------------------------------


def test_read_unlabeled_formats(tmp_path):
    (tmp_path / "u.txt").write_text("first text\n\nsecond\u2028one\r\n", encoding="utf-8")
    assert read_unlabeled(tmp_path / "u.txt") == ["first text", "second\u2028one"]
    (tmp_path / "u.jsonl").write_text('{"text": "a b", "label": 1}\n\n{"text": "c"}\n')
    assert read_unlabeled(tmp_path / "u.jsonl") == ["a b", "c"]
    (tmp_path / "u.tsv").write_text("pos\tgood film\nno label here\n")
    assert read_unlabeled(tmp_path / "u.tsv") == ["good film", "no label here"]
    folder = tmp_path / "unsup"
    folder.mkdir()
    (folder / "1_0.txt").write_text("one review\nwith two lines")
    (folder / "0_0.txt").write_text("zero")
    assert read_unlabeled(folder) == ["zero", "one review with two lines"]


@pytest.mark.parametrize("content, message", [
    ('{"text": "ok"}\n{"text": 3}\n', "u.jsonl:2: 'text' must be a string, found int"),
    ('{"text": "ok"}\n\n{"txt": "x"}\n', "u.jsonl:3: missing key 'text'; keys are ['txt']"),
    ('["a"]\n', "u.jsonl:1: expected a JSON object, found list"),
    ('{"text": "ok"}\n{oops\n', "u.jsonl:2: invalid JSON"),
])
def test_read_unlabeled_jsonl_errors(tmp_path, content, message):
    (tmp_path / "u.jsonl").write_text(content)
    with pytest.raises(DataFormatError) as err:
        read_unlabeled(tmp_path / "u.jsonl")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_read_unlabeled_other_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file .*one text per line"):
        read_unlabeled(tmp_path / "missing.txt")
    (tmp_path / "empty.txt").write_text("\n \n")
    with pytest.raises(DataFormatError, match="no texts"):
        read_unlabeled(tmp_path / "empty.txt")
    (tmp_path / "bad.txt").write_bytes(b"fine\nbad \xff byte\n")
    with pytest.raises(DataFormatError, match=r"bad.txt:2: cannot decode byte 0xff"):
        read_unlabeled(tmp_path / "bad.txt")
    assert read_unlabeled(tmp_path / "bad.txt", encoding="auto")[1] == "bad \xff byte"
    (tmp_path / "nothing").mkdir()
    with pytest.raises(FileNotFoundError, match="without \\*.txt files"):
        read_unlabeled(tmp_path / "nothing")


def test_unlabeled_texts_train_with_the_training_texts(corpus, tmp_path):
    texts, groups = corpus
    extra = [["zzunlabeled", groups[0][0]]] * 3 + [["onceonly"]]
    vectors = train_domain_vectors(texts[:300], SMALL, unlabeled_token_lists=extra,
                                   cache=False, progress=None)
    assert vectors.info["unlabeled_texts"] == 4 and "300 texts + 4 unlabeled" in vectors.name
    assert "zzunlabeled" in vectors  # seen min_count times
    assert "onceonly" not in vectors  # unlabeled-only and rare: only through .vector()
    assert vectors.vector("onceonly").shape == (25,)


def test_missing_glove_fails_before_training(tmp_path, monkeypatch):
    monkeypatch.setattr(dv, "_train", lambda *a, **k: pytest.fail("trained first"))
    with pytest.raises(FileNotFoundError, match="nothere.txt"):
        train_domain_vectors([["a", "a"]], f"domain-25d+{tmp_path / 'nothere.txt'}",
                             cache_dir=tmp_path)


def test_automatic_epochs_in_training_and_the_cache(corpus, tmp_path):
    texts, _ = corpus
    auto = DomainSpec(dim=25, bucket=20_000)
    vectors, how, lines = train_logged(texts[:200], auto, cache_dir=tmp_path)
    assert how == "trained" and "(20 epochs)" in lines[0]
    assert vectors.info["params"]["epochs"] == 20 and vectors.info["spec"] == "domain-skipgram-25d"
    named, how, _ = train_logged(texts[:200], DomainSpec(dim=25, bucket=20_000, epochs=20),
                                 cache_dir=tmp_path)
    assert how == "loaded" and named.info["spec"] == "domain-skipgram-25d-20ep"
    assert named.name.startswith("domain-skipgram-25d-20ep (gensim")
    np.testing.assert_array_equal(named.vectors, vectors.vectors)
