"""The accuracy bounds the docstrings and the README quote are the committed measurements: each
is the median or the worst case of a named population in ``book/data/accuracy_bounds.csv``
(``book/data/make_accuracy_bounds.py``: the closed forms against a 40-digit reference on random
models). A worst case is quoted rounded up to two digits (``measured <= quoted <= 1.1 x
measured``), a median rounded (within 5 %). The rules' own errors on ``1/N``
(``lime_quadrature.RULE_ERRORS``) are measured again by ``tests/theory/test_theory_lime_chain.py``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd
import pytest

from attnxai.theory import deletion_routes as dr
from attnxai.theory import lime_attention as la
from attnxai.theory import shapley_values as sv

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    df = pd.read_csv(ROOT / "book" / "data" / "accuracy_bounds.csv", comment="#")
    df["ksub"] = df["ksub"].astype(str)
    return df


def measured(table, quantity: str, population: str, ksub) -> pd.Series:
    rows = table[(table.quantity == quantity) & (table.population == population)
                 & (table.ksub == str(ksub))]["rel_error"]
    assert len(rows), (quantity, population, ksub)
    return rows


def same(quoted: tuple, rows: pd.Series) -> None:
    """``(median, worst, cases)`` against the rows."""
    med, worst, n = quoted
    assert n == len(rows)
    assert rows.max() <= worst <= 1.1 * rows.max(), (worst, rows.max())
    assert med == pytest.approx(rows.median(), rel=0.05)


def test_the_chains_errors(table):
    assert set(la.CHAIN_ERRORS) == {1, 2, 4, 8}
    for ksub, quoted in la.CHAIN_ERRORS.items():
        same(quoted, measured(table, "LIME limit, chain", "random models, distinct words", ksub))
    doc = " ".join(inspect.getdoc(la.lime_limit).split())
    for ksub, (med, worst, n) in la.CHAIN_ERRORS.items():
        assert f"{worst:.1e}" in doc, (ksub, worst)
    assert f"median {la.CHAIN_ERRORS[1][0]:.1e}, worst {la.CHAIN_ERRORS[1][1]:.1e}" in doc
    assert f"on {la.CHAIN_ERRORS[1][2]} cases" in doc


def test_the_shapley_values_errors(table):
    assert set(sv.MEASURED_EXACTNESS) == {"default", 1, 2, 3}
    for ksub, quoted in sv.MEASURED_EXACTNESS.items():
        same(quoted, measured(table, "Shapley, defaults", "random models, distinct words", ksub))
    med, worst, n = sv.MEASURED_EXACTNESS["default"]
    doc = " ".join(sv.__doc__.split())
    assert f"median {med:.1e}, worst {worst:.1e}" in doc
    rows = measured(table, "Shapley, defaults against the chain (ksub=3)",
                    "random models, 255 tokens", "default")
    assert len(rows) == 8 and rows.max() <= 1.1e-10 <= 1.1 * rows.max()
    assert "within 1.1e-10 of the largest value (median " \
           f"{rows.median():.1e}) of the chain with ``ksub=3``" in doc
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"the largest error is {worst:.1e} of the largest value (median {med:.1e};" in readme
    assert f"on {n} random models" in readme


def test_the_exact_routes_stated_error(table):
    """GameResult.rel_error of the exact route is the worst of LIME's limit and the Shapley values
    on the repeated-words population, for each measured ksub."""
    for ksub, worst in dr.EXACT_ERRORS.items():
        rows = pd.concat([measured(table, q, "random models, repeated words", ksub)
                          for q in ("LIME limit, exact route", "Shapley, exact route")])
        assert len(rows) == 64
        assert rows.max() <= worst <= 1.1 * rows.max(), (ksub, worst, rows.max())
    doc = " ".join(dr.GameResult.__doc__.split())
    assert f"{dr.EXACT_ERRORS[2]:.1e} of the largest value at ``ksub=2``, " \
           f"{dr.EXACT_ERRORS[1]:.1e} at 1" in doc
    assert dr._rule_error(2) == dr.EXACT_ERRORS[2] and dr._rule_error(5) == dr.EXACT_ERRORS[8]
