"""attnxai.chapters.limitstudy: chapter 6 reads its committed LIME-limit study through it;
checked on a table written here and on the committed summary."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnxai.chapters import limitstudy

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def corpus():
    return pd.DataFrame({"approximation": ["limit", "limit", "paper"], "bow": [True, False, True],
                         "err2_ms": [0.05, 0.01, 0.5], "floor_ms": [0.01, 0.02, 0.01],
                         "norm_mean": [2.0, 2.0, 2.0]})


def test_the_systematic_part_is_what_lies_above_the_floor(corpus):
    assert limitstudy.systematic(corpus, "limit", True) == pytest.approx(np.sqrt(0.04) / 2)
    assert limitstudy.systematic(corpus, "paper", True) == pytest.approx(np.sqrt(0.49) / 2)
    assert limitstudy.systematic(corpus, "limit", False) == 0.0       # within the floor
    assert limitstudy.study_row(corpus, "paper", True).err2_ms == 0.5
    with pytest.raises(KeyError, match="0 rows for 'paper' with bow=False"):
        limitstudy.systematic(corpus, "paper", False)
    with pytest.raises(KeyError, match="2 rows"):
        limitstudy.study_row(pd.concat([corpus, corpus]), "limit", True)


def test_the_committed_summary_has_one_row_per_approximation_and_mode():
    corpus = pd.read_csv(ROOT / "book" / "data" / "lime_corpus_summary.csv", comment="#")
    for name in corpus.approximation.unique():
        for bow in (True, False):
            share = limitstudy.systematic(corpus, name, bow)
            assert 0 <= share < 10
