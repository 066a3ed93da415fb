"""attnxai.chapters.agreement: chapter 9 reads the committed agreement study through it; checked
on a small table written here and on the committed file (every pair of its explainers, both
modes)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from attnxai.chapters import agreement

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["Shapley", "LIME", "alpha-avg"]


@pytest.fixture
def table():
    rows = [("delete", "spearman", "Shapley ~ LIME", 0.8, 0.7, 0.9),
            ("delete", "spearman", "Shapley ~ alpha-avg", 0.1, 0.0, 0.2),
            ("delete", "spearman", "LIME ~ alpha-avg", 0.05, -0.05, 0.15),
            ("delete", "spearman", "alpha-avg: Shapley - LIME", 0.05, 0.01, 0.09),
            ("replace", "spearman", "Shapley ~ LIME", 0.6, 0.5, 0.7)]
    return pd.DataFrame(rows, columns=["mode", "metric", "pair", "mean", "ci_low", "ci_high"])


def test_a_pair_reads_the_same_in_either_order(table):
    f = agreement.pair_agreement
    assert f(table, NAMES, "delete", "spearman", "LIME", "Shapley") == 0.8
    assert f(table, NAMES, "delete", "spearman", "Shapley", "LIME", "ci_high") == 0.9
    assert f(table, NAMES, "replace", "spearman", "LIME", "Shapley") == 0.6
    with pytest.raises(KeyError, match="0 rows .*'replace'.*Shapley ~ alpha-avg"):
        f(table, NAMES, "replace", "spearman", "alpha-avg", "Shapley")
    with pytest.raises(KeyError, match="'IG' is not one"):
        f(table, NAMES, "delete", "spearman", "IG", "Shapley")
    with pytest.raises(ValueError, match="what"):
        f(table, NAMES, "delete", "spearman", "LIME", "Shapley", "median")


def test_the_matrix_is_symmetric_with_ones_on_the_diagonal(table):
    m = agreement.agreement_matrix(table, NAMES, "delete", "spearman")
    assert list(m.index) == NAMES and np.allclose(m, m.T) and np.allclose(np.diag(m), 1)
    assert m.loc["alpha-avg", "LIME"] == 0.05


def test_the_paired_difference(table):
    assert agreement.shapley_minus(table, "delete", "spearman", "LIME") == 0.05
    assert agreement.shapley_minus(table, "delete", "spearman", "LIME", "ci_low") == 0.01
    with pytest.raises(KeyError):
        agreement.shapley_minus(table, "replace", "spearman", "LIME")


def test_the_committed_study_has_every_pair_once():
    AG = pd.read_csv(ROOT / "book" / "data" / "shapley_agreement.csv", comment="#")
    names = ["Shapley", "Banzhaf", "LIME", "LIME limit", "IG", "GxI", "alpha-avg"]
    for mode in ("delete", "replace"):
        m = agreement.agreement_matrix(AG, names, mode, "spearman")
        assert m.shape == (7, 7) and np.allclose(m, m.T) and ((m >= -1) & (m <= 1)).all().all()
        d = agreement.shapley_minus(AG, mode, "pearson_abs", "LIME", "ci_low")
        assert d <= agreement.shapley_minus(AG, mode, "pearson_abs", "LIME")
