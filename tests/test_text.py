import pytest

from attnxai.text import Vocab, normalize_for_lime, tokenize


@pytest.mark.parametrize("text, expected", [
    ("Hello World", ["hello", "world"]),
    ("Great movie!<br /><br />Loved it.", ["great", "movie", "!", "loved", "it", "."]),
    ("don't", ["don", "'", "t"]),
    ('He said "wow"', ["he", "said", "wow"]),
    ("Wait... what?!", ["wait", ".", ".", ".", "what", "?", "!"]),
    ("(1999), 3.5/10", ["(", "1999", ")", ",", "3", ".", "5/10"]),
    ("a;b:c", ["a", "b", "c"]),
    ("Café — naïve", ["café", "—", "naïve"]),
    ("well-made *spoiler*", ["well-made", "*spoiler*"]),
    ("  \t\n ", []),
    ("", []),
])
def test_tokenize_matches_basic_english(text, expected):
    assert tokenize(text) == expected


def test_tokenize_rejects_non_str():
    with pytest.raises(TypeError, match="expects a str"):
        tokenize(b"bytes")


def test_normalize_for_lime():
    assert normalize_for_lime("It's GREAT!!<br />10/10, café") == "it s great br 10 10 caf"
    assert normalize_for_lime("a " * 300).count("a") == 255
    with pytest.raises(ValueError, match="no alphanumeric"):
        normalize_for_lime("?!...")


def test_vocab_build_encode_decode():
    v = Vocab.build(["the cat", "the dog", "The bird"], min_freq=1)
    assert v.itos[:4] == ["[PAD]", "[CLS]", "UNK", "the"]
    ids = v.encode("The cat and the zebra")
    assert ids[0] == v.cls_id
    assert v.decode(ids) == ["[CLS]", "the", "cat", "UNK", "the", "UNK"]
    assert Vocab.build(["the cat", "the dog"], min_freq=2).itos == ["[PAD]", "[CLS]", "UNK", "the"]


def test_vocab_maps_lime_mask_to_unk():
    v = Vocab.build(["unk is a word here", "really"])
    assert "unk" not in v.itos
    assert v.encode("UNK really")[1] == v.unk_id


def test_vocab_truncation_and_errors():
    v = Vocab.build(["a b c"])
    assert len(v.encode("a " * 400, max_len=256)) == 256
    with pytest.raises(ValueError, match="model accepts 255"):
        v.encode("a " * 400, max_len=256, truncate=False)
    with pytest.raises(ValueError, match="empty"):
        v.encode("   ")
    with pytest.raises(ValueError, match="without any letter or digit"):
        v.encode("?!... ,")
    with pytest.raises(TypeError):
        v.encode(None)
    with pytest.raises(ValueError, match="min_freq"):
        Vocab.build(["a"], min_freq=0)


def test_vocab_roundtrip(tmp_path):
    v = Vocab.build(["x y z y"])
    v.save(tmp_path / "v.json")
    assert Vocab.load(tmp_path / "v.json").itos == v.itos


# torchtext's basic_english as it is written there: twelve regular expressions in order (the
# reference for the tokenizer's string-method passes)
_BASIC_ENGLISH = [(r"\'", " '  "), (r"\"", ""), (r"\.", " . "), (r"<br \/>", " "), (r",", " , "),
                  (r"\(", " ( "), (r"\)", " ) "), (r"\!", " ! "), (r"\?", " ? "), (r"\;", " "),
                  (r"\:", " "), (r"\s+", " ")]


def _basic_english(text: str) -> list[str]:
    import re

    line = text.lower()
    for pattern, repl in _BASIC_ENGLISH:
        line = re.sub(pattern, repl, line)
    return line.split()


def test_tokenize_is_basic_english_on_imdb_reviews(imdb):
    """Every 10th review of each split (5,000 reviews: the whole corpus takes a minute)."""
    for review in imdb.train[::10] + imdb.valid[::10] + imdb.test[::10]:
        assert tokenize(review.text) == _basic_english(review.text), review.text[:200]


_TRICKY = "'\".<br />,()!?;:\t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000 aB\u0130\u00c9-*/"


@pytest.mark.parametrize("seed", range(4))
def test_tokenize_is_basic_english_on_random_texts(seed):
    """Texts drawn from the rules' characters, every kind of whitespace, '<br />' pieces and
    letters whose lowercase changes length: the same tokens as the regular expressions."""
    import random

    rng = random.Random(seed)
    pieces = list(_TRICKY) + ["<br />", "<br", " />", '<br "/>', "<br;/>", "<br./>", "<br'/>"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        assert tokenize(text) == _basic_english(text), repr(text)
