"""Mutation testing of the book's stated results: does a plausible bug in a closed form (or in a
metric, or a validator) make the tests of that result fail?

Each mutant of :data:`MUTANTS` changes one expression of ``src/attnxai`` (``theory/``,
``perturbation/``, ``fastlime/``, ``validate.py``) into a plausible wrong one, and names what
should catch it: ``label``, a ``:label:`` of a theorem or proposition of the book, whose tests are
the ones marked ``@pytest.mark.falsifies(label)`` (read by ``tests/results/test_results_registry.py``),
and/or ``tests``, explicit test ids (for code no stated result covers: fastlime's equality with
lime, the metrics' equality with ferret, the validators' answers to valid input). The two sets
run separately, so the report says whether the label's tests alone kill a mutant. The mutant is
applied to a copy of ``src/`` in a temporary directory (the working tree is never changed) and
only those tests run, one process, one thread, under ``nice``, hypothesis without shrinking
(``ATTNXAI_HYPOTHESIS_NO_SHRINK=1``: only whether a test fails matters). Outcomes: ``killed`` (a
test failed; the first error line is recorded), ``survived`` (all passed), ``stale`` (the
expression is no longer in the source: update the mutant), ``timeout``. A mutant ``equivalent``
for its label's tests says why (``equivalent=...``): it cannot change what they check, and its
own ``tests`` (if any) must kill it. A baseline run of the unmutated source on the union of the
tests comes first and must pass (so no kill is a test's own error).

``python benchmarks/mutation.py`` runs every mutant (about 30 minutes on a loaded core) and writes
``book/data/mutation_report.csv``; ``--only ID ...`` reruns some (their rows replace those of the
last report); ``--list`` prints them. Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "book" / "data" / "mutation_report.csv"
FIELDS = ("id", "file", "label", "tests", "description", "equivalent", "outcome",
          "label_outcome", "label_seconds", "label_failed", "tests_outcome", "tests_seconds",
          "tests_failed")


@dataclass(frozen=True)
class Mutant:
    id: str
    file: str                    # under src/attnxai
    before: str                  # must occur exactly once in the file
    after: str
    description: str
    label: str = ""              # the stated result whose falsifies-tests must kill it
    tests: tuple[str, ...] = ()  # extra test ids (pytest node ids or "file -k expr")
    equivalent: str = ""         # why the tests cannot see it, when they cannot


FASTLIME_VS_LIME = ("tests/fastlime/test_fastlime.py::test_kernel_weights_are_bitwise_lime",
                    "tests/fastlime/test_fastlime.py::test_weighted_ridge_equals_sklearn",
                    "tests/fastlime/test_fastlime.py::test_tiny_documents",
                    "tests/fastlime/test_fastlime.py::test_generic_path_recovers_a_linear_function")
FERRET = ("tests/experiment/test_faithfulness_ferret.py::test_untied_scores_equal_ferrets_evaluators",
          "tests/experiment/test_faithfulness_ferret.py::"
          "test_tied_scores_equal_ferret_where_numpys_sort_keeps_ties_in_order",
          "tests/experiment/test_faithfulness.py::test_metrics_equal_a_literal_port_of_ferret",
          "tests/experiment/test_faithfulness.py::test_rankings_sizes_and_ties",
          "tests/experiment/test_faithfulness.py::test_ferret_ties_equal_ferrets_rationales",
          "tests/experiment/test_faithfulness.py::test_no_positive_score_gets_ferrets_values",
          "tests/experiment/test_faithfulness.py::test_cls_is_never_removed_and_curve_endpoints")

PROPERTIES = ("tests/test_properties.py",)
FORWARD_ROWS = ("tests/model/test_forward_rows.py::test_forward_rows_is_forward_logits_and_gradients",)
SAMPLED = tuple(f"tests/theory/test_theory_deletion_exact.py::test_{t}" for t in (
    "sampled_route_scatters_around_the_enumeration_as_its_standard_errors_say",
    "sampled_route_pools_to_the_truth", "sampled_route_stops_at_its_tolerance_or_says_it_did_not",
    "linear_sums_by_enumeration", "subset_masks_are_uniform", "the_interval_is_steins"))
#: The exact route of deletion with repeated words, by enumeration (unlabelled tests).
EXACT_REPEATS = tuple(f"tests/theory/test_theory_deletion_exact.py::test_{t}" for t in (
    "shapley_banzhaf_and_curves_are_exact", "lime_limit_is_exact"))

_DIST = ("theory/lime_text/law.py", "return 100.0 * (1.0 - np.sqrt((d - s) / d))",
         "return 100.0 * (1.0 - (d - s) / d)", "lime's distance without its square root")
_NODES = ("theory/shapley_values.py", "n_nodes = min(max(1, math.ceil(d / 2)), cap)",
          "n_nodes = min(max(1, math.ceil((d - 1) / 2)), cap)",
          "Shapley's default Gauss nodes ceil((d-1)/2): one short for odd d")

_SOFTMAX_DROPS = ("perturbation/perturber.py",
                  "    if others.shape[1] != 2:\n        return softmax(full[None], target)[0]",
                  "    if True:\n        return softmax(full[None], target)[0]",
                  "leave-one-out drops as differences of rounded probabilities (ferret's way), "
                  "not from the logit margins")

_FERRET_TIES = ("perturbation/rankings.py", 'order = np.argsort(key, kind="stable")[::-1]',
                'order = np.argsort(-key, kind="stable")',
                'ties="ferret" taking the earlier position first')

MUTANTS: tuple[Mutant, ...] = (
    # ---- chapter 5-6: LIME's limit
    Mutant("lime-distance-sqrt/chain", *_DIST, label="thm-lime-chain"),
    Mutant("lime-distance-sqrt/text", *_DIST, label="thm-lime-text-limit"),
    Mutant("lime-kernel-sqrt", "theory/lime_text/law.py",
           "return np.sqrt(np.exp(-dist ** 2 / (nu * nu)))",
           "return np.exp(-dist ** 2 / (nu * nu))",
           "lime's kernel exp(-D^2/nu^2), its square root forgotten", label="thm-lime-chain"),
    Mutant("lime-moment-alpha2", "theory/lime_text/sigma.py",
           "k * (k - 1) / (d * (d - 1))", "k * k / (d * d)",
           "E[pi z_j z_k] with j = k allowed", label="thm-lime-text-limit"),
    Mutant("lime-sigma-inverse-sign", "theory/lime_text/sigma.py",
           "inv[0, 1:] = inv[1:, 0] = -m / c", "inv[0, 1:] = inv[1:, 0] = m / c",
           "Sigma^-1's off-diagonal block with the wrong sign", label="thm-lime-text-limit"),
    Mutant("lime-profile-slope", "theory/lime_text/limits.py",
           "return main + slope / d", "return main + slope / (d - 1)",
           "the profile form's slope over d - 1", label="prop-lime-profile"),
    Mutant("lime-profile-weight", "theory/lime_quadrature.py",
           "    w = p * (1 - p)\n    mp = float(np.sum(q * p))",
           "    w = p\n    mp = float(np.sum(q * p))",
           "lime_limit's profile weights U with p instead of p (1 - p)",
           label="thm-lime-attention-limit"),
    Mutant("lime-effects-weight", "theory/lime_text/limits.py",
           "    w = p * (1 - p)\n    centred", "    w = p\n    centred",
           "beta_from_effects' weight p instead of p (1 - p)", label="prop-lime-profile"),
    Mutant("lime-heads-sum", "theory/lime_attention.py",
           "**given).mean(axis=0)",
           "**given).sum(axis=0)",
           "the heads summed instead of averaged", label="prop-lime-heads"),
    # ---- chapter 9: Shapley, Banzhaf, IG
    Mutant("shapley-default-nodes/chain", *_NODES, label="prop-shapley-chain"),
    Mutant("shapley-default-nodes/integral", *_NODES, label="thm-shapley-integral"),
    Mutant("shapley-size-weight-last", "theory/deletion_routes.py",
           "om[n] = 1.0 / n", "om[n] = 1.0 / (n + 1)",
           "the chain's weight of the full coalition 1/(n+1)", label="prop-shapley-chain",
           equivalent="omega_n multiplies B_n(j) = v(all), the same for every j, so it adds one "
                      "constant to every on_j, which phi_j = on_j - mean_k on_k + ... cancels "
                      "(per token before the per-word sums): no value of shapley() changes"),
    # ---- deletion with repeated words: the exact route (chapter 9)
    Mutant("repeats-fixed-before-itself", "theory/lime_repeats.py",
           "steps[L, 2] = F\n                if r >= 0:\n                    F += 1\n",
           "if r >= 0:\n                    F += 1\n                steps[L, 2] = F\n",
           "a kept repeated word counted as a fixed token before itself",
           label="prop-deletion-configurations", tests=EXACT_REPEATS),
    Mutant("repeats-law-size", "theory/lime_repeats.py",
           "m = k[:, None] + c[None]", "m = 0 * k[:, None] + c[None]",
           "the law's kept size forgetting the kept repeated words",
           label="prop-deletion-configurations", tests=EXACT_REPEATS),
    Mutant("repeats-last-head", "theory/lime_repeats.py",
           "for k in range(tb.n_heads):", "for k in range(tb.n_heads - 1):",
           "the exact route dropping the last head", label="prop-deletion-configurations",
           tests=EXACT_REPEATS),
    Mutant("repeats-omega-binomial", "theory/lime_repeats.py",
           "return np.exp(logW[m] + logC[None])", "return np.exp(logW[m])",
           "the chain's weights of c kept single words without C(d_s, c)",
           label="prop-deletion-configurations", tests=EXACT_REPEATS),
    Mutant("repeats-repeated-column", "theory/lime_repeats.py",
           "o[:, 1 + lay.repeated] = configs * tot[:, None]",
           "o[:, 1 + lay.repeated] = tot[:, None]",
           "a repeated word's G_j summing the configurations that delete it too",
           label="prop-deletion-configurations", tests=EXACT_REPEATS),
    # ---- deletion with repeated words: the certified (sampled) route
    Mutant("sampled-pairs-asymmetric", "theory/deletion_sampled.py",
           "self.paired = bool(np.allclose(self.q, self.q[::-1], rtol=1e-12, atol=0))",
           "self.paired = True",
           "the sampled route pairing complements under lime's asymmetric law",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-size-law", "theory/deletion_sampled.py",
           "np.where(W > 0, logC + np.log(", "np.where(W > 0, 0 * logC + np.log(",
           "the sampled route's law of the kept size without C(d, m)",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-linear-pairs", "theory/deletion_sampled.py",
           "comb(d - 2, m - 2) * W", "comb(d - 2, m - 1) * W",
           "the control game's sums with the pairs' count one size off",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-shapley-endpoint", "theory/deletion_routes.py",
           'const_s = const if value == "shapley" else np.zeros_like(const)',
           "const_s = np.zeros_like(const)",
           "the sampled Shapley values without (f(all) - f(empty)) / d",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-stderr", "theory/deletion_sampled.py",
           "se = per_batch[:MIN_BATCHES].std(axis=0, ddof=1) / math.sqrt(nb)",
           "se = per_batch[:MIN_BATCHES].std(axis=0, ddof=1) / nb",
           "the standard errors over nb instead of sqrt(nb)", label="prop-deletion-sampled",
           tests=SAMPLED),
    Mutant("sampled-normal-quantile", "theory/deletion_sampled.py",
           "return float(t.ppf(0.5 + level / 2, df))", "return float(t.ppf(0.5 + level / 2, 10 ** 9))",
           "the intervals and the stopping rule with the normal quantile (1.96 at 95 %) instead "
           "of Student's t with the first stage's degrees of freedom",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-stop-one-se", "theory/deletion_sampled.py",
           "t = t_factor(MIN_BATCHES - 1)\n        room", "t = 1.0\n        room",
           "stopping when one standard error (not the 95 % half-width) is within tol",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("study-settings-dropped", "experiment/shapley_corpus.py",
           "{**given.get(m, {}), **fields}", "given.get(m, {})",
           "the agreement study's --set settings checked but not given to the methods",
           tests=("tests/experiment/test_shapley_corpus.py::test_further_settings_reach_the_row_and_are_checked",)),
    Mutant("sampled-shuffle", "theory/deletion_sampled.py",
           "k = j + r\n", "k = r\n",
           "the partial Fisher-Yates shuffle drawing from the wrong range",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-importance-weight", "theory/deletion_sampled.py",
           "wts = self.Z * self.q[sizes] / self.qs[sizes]", "wts = self.Z + 0 * self.qs[sizes]",
           "the adapted law's draws without their importance weights",
           label="prop-deletion-sampled", tests=SAMPLED),
    Mutant("sampled-empty-set", "theory/deletion_sampled.py",
           "out[:, 0] = W[0] * r[0] + W[d] * r[1]", "out[:, 0] = W[d] * r[1]",
           "the empty set's exact term left out of G_0", label="prop-deletion-sampled",
           tests=SAMPLED),
    Mutant("shapley-efficiency-term", "theory/shapley_values.py",
           "((full - empty) / n)[:, None]", "((full - empty) / (n + 1))[:, None]",
           "the chain's efficiency term over n + 1", label="prop-shapley-chain"),
    Mutant("banzhaf-point", "theory/shapley_values.py",
           "delta, _ = _effects(g, np.array([0.5]), ksub)",
           "delta, _ = _effects(g, np.array([0.45]), ksub)",
           "Banzhaf at p = 0.45", label="prop-three-weightings"),
    Mutant("weights-shapley-nodes", "theory/shapley_weights.py",
           'return {"Shapley": gauss_nodes(max(1, math.ceil(d / 2))),',
           'return {"Shapley": gauss_nodes(max(1, math.ceil((d - 1) / 2))),',
           "weight_functions' Shapley rule one node short for odd d",
           label="prop-three-weightings"),
    Mutant("ig-rule-sign", "theory/ig_theorem.py",
           "alpha * (du + ds * (u - F))", "alpha * (du - ds * (u - F))",
           "IG's path derivative with the attention term's sign flipped",
           label="thm-ig-closed-form"),
    # ---- chapters 3, 4, 8: the gradient
    Mutant("gradient-scale", "theory/gradient_theorem.py",
           "scale = 1.0 / math.sqrt(model.d_attn)", "scale = 1.0 / model.d_attn",
           "the key/query terms over d_att instead of sqrt(d_att)", label="thm-gradient"),
    Mutant("gradient-no-query", "theory/gradient_theorem.py",
           'query[:, 0] = torch.einsum("bkt,bkta,kad->bd", c, it.k, W_q) / K',
           'query[:, 0] = 0 * torch.einsum("bkt,bkta,kad->bd", c, it.k, W_q) / K',
           "the query term forgotten", label="thm-gradient"),
    Mutant("gradient-value-heads", "theory/gradient_theorem.py",
           'value = torch.einsum("bkt,kd->btd", alpha, u_value) / K',
           'value = torch.einsum("bkt,kd->btd", alpha, u_value)',
           "the value term summed over heads", label="cor-gxi"),
    Mutant("skip-term-position", "theory/gradient_skip.py",
           "skip[:, 0] = model.W_s.detach()[target]", "skip[:, -1] = model.W_s.detach()[target]",
           "the skip term at the last position instead of [CLS]", label="thm-skip-gradient"),
    # ---- chapter 7: the faithfulness measures
    Mutant("faith-softmax-target", "perturbation/perturber.py",
           "return e[:, target] / e.sum(axis=1)", "return e[:, 1] / e.sum(axis=1)",
           "the probability of class 1 whatever the target", label="prop-faith-two-classes"),
    Mutant("faith-empty-sufficiency", "perturbation/measures.py",
           "comp, suff = 0.0, 1.0", "comp, suff = 0.0, 0.0",
           "an empty rationale's sufficiency 0 (ferret: 1)", label="prop-faith-two-classes"),
    Mutant("faith-abs-key", "perturbation/rankings.py",
           'key = np.abs(s) if selection == "abs" else s',
           'key = -np.abs(s) if selection == "abs" else s',
           "the abs rule ranking smallest |score| first", label="prop-faith-unsigned"),
    Mutant("faith-positive-zero", "perturbation/rankings.py",
           "order = order[s[order] > 0]", "order = order[s[order] >= 0]",
           "the positive rule keeping zero scores", label="prop-faith-unsigned", tests=FERRET,
           equivalent="for prop-faith-unsigned's tests: the proposition assumes every score > 0, "
                      "where >= 0 and > 0 select the same positions (ferret's tests must kill it)"),
    Mutant("faith-loo-sign", "perturbation/measures.py",
           "loo = drops_of(logits[0], logits[2:2 + n], target)",
           "loo = -drops_of(logits[0], logits[2:2 + n], target)",
           "leave-one-out drops with the wrong sign", label="prop-faith-two-classes",
           tests=FERRET,
           equivalent="for prop-faith-two-classes: negating both classes' drops keeps loo_0 = "
                      "-loo_1 and tau_0 = -tau_1 (ferret's tests must kill it)"),
    Mutant("faith-insertion-area", "perturbation/measures.py",
           '"insertion_auc": np.trapezoid(icurve, fractions)',
           '"insertion_auc": np.trapezoid(dcurve, fractions)',
           "the insertion area computed on the deletion curve", label="prop-faith-flip",
           tests=("tests/experiment/test_faithfulness.py::"
                  "test_curves_and_areas_against_the_model_on_every_prefix",),
           equivalent="for prop-faith-flip: the deletion area of the other class is 1 - that of "
                      "this class too, so the proposition holds for the wrong area as well"),
    Mutant("faith-aopc-duplicates", "perturbation/rankings.py",
           "if kk == 0 or (out and out[-1] == kk):", "if kk == 0:",
           "AOPC averaging a repeated rationale again (ferret leaves it out)",
           label="prop-faith-two-classes", tests=FERRET,
           equivalent="for prop-faith-two-classes: any averaging of the same sizes negates "
                      "with the class (ferret's tests must kill it)"),
    Mutant("faith-tau-exact-ties", "perturbation/measures.py",
           "return np.where(np.abs(diff) <= tie, 0, np.sign(diff)).astype(np.int8)",
           "return np.sign(diff).astype(np.int8)",
           "tau-LOO's drops tied only when their floats are equal (scipy's and ferret's rule)",
           label="prop-faith-tau-ties"),
    Mutant("faith-tau-tie-too-small", "perturbation/rankings.py",
           "LOO_TIE = 2.0 ** -36", "LOO_TIE = 2.0 ** -52",
           "tau-LOO's tie tolerance below the backends' rounding (one unit of 2^-52)",
           label="prop-faith-tau-ties"),
    Mutant("faith-drops-softmax", *_SOFTMAX_DROPS, label="prop-faith-two-classes"),
    Mutant("faith-drops-softmax/flip", *_SOFTMAX_DROPS, label="prop-faith-flip"),
    Mutant("faith-drops-one-backend", "perturbation/measures.py",
           "loo = drops_of(logits[0], logits[2:2 + n], target)",
           'loo = (drops_of(logits[0], logits[2:2 + n], target) if P.backend_used == "fast" '
           "else px - probs[2:2 + n])",
           "the model backend alone back to differences of rounded probabilities",
           label="prop-faith-two-classes"),
    Mutant("faith-ferret-ties", *_FERRET_TIES, tests=FERRET),
    Mutant("faith-ferret-ties/vendored", *_FERRET_TIES, tests=FERRET[:2]),
    Mutant("faith-positive-zero/vendored", "perturbation/rankings.py", "order = order[s[order] > 0]",
           "order = order[s[order] >= 0]", "the positive rule keeping zero scores",
           tests=FERRET[:2]),
    # ---- the training path: forward_rows is the forward, LazyAdamW the stated update
    Mutant("forward-rows-no-mask", "model/single_layer.py",
           'alpha = torch.softmax(Z[..., :K].masked_fill(~mask[..., None], float("-inf")), dim=1)',
           "alpha = torch.softmax(Z[..., :K], dim=1)",
           "forward_rows attending to padding", tests=FORWARD_ROWS),
    Mutant("forward-rows-query-scale", "model/single_layer.py",
           'u = torch.einsum("ka,kad->kd", q1, self.W_k) / math.sqrt(self.d_attn)',
           'u = torch.einsum("ka,kad->kd", q1, self.W_k) / self.d_attn',
           "forward_rows' scores over d_att instead of sqrt(d_att)", tests=FORWARD_ROWS),
    Mutant("lazy-adamw-second-moment", "model/optim.py",
           'for t, new in ((p, w), (st["exp_avg"], m), (st["exp_avg_sq"], v)):',
           'for t, new in ((p, w), (st["exp_avg"], m)):',
           "the rows' second moments never written back", tests=("tests/model/test_optim.py",)),
    Mutant("lazy-adamw-repeated-rows", "model/optim.py",
           "grad = p.grad.coalesce()", "grad = p.grad._coalesced_(True)",
           "a gradient's repeated rows taken as distinct (marked coalesced, not summed)",
           tests=("tests/model/test_optim.py",)),
    # ---- the validators: valid input must be answered (tests/test_properties.py)
    Mutant("validate-numpy-ints", "validate.py",
           "if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):\n"
           "        raise TypeError(f\"{name} must be an int",
           "if isinstance(value, (bool, np.bool_)) or not isinstance(value, int):\n"
           "        raise TypeError(f\"{name} must be an int",
           "numpy integers refused where the docs accept them", tests=PROPERTIES),
    Mutant("validate-one-sample-more", "validate.py", "if n < 2:", "if n < 3:",
           "num_samples = 2 refused", tests=PROPERTIES),
    # ---- fastlime: bitwise lime
    Mutant("fastlime-kernel-sqrt", "fastlime/sampling.py",
           "return np.sqrt(np.exp(-(dist ** 2) / w2))", "return np.exp(-(dist ** 2) / w2)",
           "fastlime's weights without the square root", tests=FASTLIME_VS_LIME),
    Mutant("fastlime-distance-scale", "fastlime/sampling.py",
           "dist = np.clip(1.0 - sim, 0.0, 2.0) * 100", "dist = np.clip(1.0 - sim, 0.0, 2.0) * 10",
           "cosine distance times 10", tests=FASTLIME_VS_LIME),
    Mutant("fastlime-ridge-alpha", "fastlime/ridge.py",
           "a.flat[:: d + 1] += alpha", "a.flat[:: d + 1] += alpha / 2",
           "half the ridge penalty", tests=FASTLIME_VS_LIME),
    Mutant("fastlime-intercept", "fastlime/ridge.py",
           "intercept = float(ybar - xbar @ coef)", "intercept = float(ybar + xbar @ coef)",
           "the intercept's sign", tests=FASTLIME_VS_LIME),
)


def label_tests() -> dict[str, list[str]]:
    """label -> the node ids of its falsifies-tests (tests/results/test_results_registry.py)."""
    spec = importlib.util.spec_from_file_location("registry", ROOT / "tests" / "results" /
                                                  "test_results_registry.py")
    reg = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reg)
    out: dict[str, list[str]] = {}
    for t in reg.falsification_tests():
        for label in t["labels"]:
            out.setdefault(label, []).append(f"{t['file']}::{t['test']}")
    return out


def label_tests_of(m: Mutant, by_label: dict[str, list[str]]) -> list[str]:
    ids = list(by_label.get(m.label, [])) if m.label else []
    if m.label and not ids:
        raise SystemExit(f"{m.id}: no test is marked falsifies({m.label!r})")
    return ids


def _sandbox(tmp: Path) -> Path:
    """A copy of the repository's ``src`` beside links to everything else (tests, book, ...)."""
    for entry in ROOT.iterdir():
        if entry.name in ("src", ".git"):
            continue
        (tmp / entry.name).symlink_to(entry)
    shutil.copytree(ROOT / "src", tmp / "src", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp


def apply(m: Mutant, src: Path) -> bool:
    path = src / "attnxai" / m.file
    text = path.read_text(encoding="utf-8")
    if text.count(m.before) != 1:
        return False
    path.write_text(text.replace(m.before, m.after), encoding="utf-8")
    return True


def run_tests(root: Path, tests: list[str], timeout: float) -> tuple[str, float, str]:
    env = os.environ | {"PYTHONPATH": str(root / "src"), "OMP_NUM_THREADS": "1",
                        "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1",
                        "OPENBLAS_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
                        "ATTNXAI_HYPOTHESIS_NO_SHRINK": "1"}
    cmd = ["nice", "-n", "10", sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-W", "ignore", "--no-header", "-rf", *tests]
    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                             timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - t0, ""
    secs = time.perf_counter() - t0
    lines = res.stdout.splitlines()
    failed = " ".join(line.split()[1] for line in lines
                      if line.startswith(("FAILED", "ERROR")) and len(line.split()) > 1)
    # what failed: the first error line (an AssertionError is a kill; an exception raised by the
    # test's own reference would be a false one, which the unmutated baseline run rules out)
    why = next((line[1:].strip() for line in lines if line.startswith("E ") and line[1:].strip()),
               "")
    failed = f"{failed} [{why[:100]}]" if why else failed
    if res.returncode == 0:
        return "survived", secs, ""
    if res.returncode == 1:
        return "killed", secs, failed
    return f"error (pytest exit {res.returncode})", secs, failed or res.stdout[-300:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="mutant ids to run")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--report", type=Path, default=REPORT)
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args(argv)
    by_label = label_tests()
    chosen = [m for m in MUTANTS if not args.only or m.id in args.only]
    if args.list:
        for m in chosen:
            print(f"{m.id:32s} {m.label or '-':24s} {m.description}")
        return 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="attnxai-mutants-") as tmp:
        root = _sandbox(Path(tmp))
        pristine = root / "src.pristine"
        shutil.copytree(root / "src", pristine)
        if not args.no_baseline:
            union = sorted({t for m in chosen for t in (*label_tests_of(m, by_label), *m.tests)})
            outcome, secs, failed = run_tests(root, union, args.timeout * 3)
            print(f"baseline ({len(union)} tests): {outcome} in {secs:.0f} s {failed}", flush=True)
            if outcome != "survived":
                raise SystemExit("the unmutated source fails its own tests: fix that first")
        for m in chosen:
            shutil.rmtree(root / "src")
            shutil.copytree(pristine, root / "src")
            row = {"id": m.id, "file": m.file, "label": m.label, "tests": " ".join(m.tests),
                   "description": m.description, "equivalent": m.equivalent}
            if not apply(m, root / "src"):
                row |= {"label_outcome": "stale", "tests_outcome": "stale", "outcome": "stale"}
            else:
                for kind, tests in (("label", label_tests_of(m, by_label)), ("tests", m.tests)):
                    got = run_tests(root, list(tests), args.timeout) if tests else ("", 0.0, "")
                    row |= {f"{kind}_outcome": got[0], f"{kind}_seconds": round(got[1], 1),
                            f"{kind}_failed": got[2]}
                row["outcome"] = ("killed" if "killed" in (row["label_outcome"],
                                                           row["tests_outcome"]) else
                                  row["label_outcome"] or row["tests_outcome"])
            rows.append(row)
            print(f"{m.id:32s} {row['outcome']:9s} label: {row.get('label_outcome') or '-'} "
                  f"{row.get('label_failed', '')}  tests: {row.get('tests_outcome') or '-'} "
                  f"{row.get('tests_failed', '')}", flush=True)
    rows = write_report(args.report, rows, merge=bool(args.only))
    summary(rows)
    return 0


def write_report(path: Path, rows: list[dict], merge: bool) -> list[dict]:
    """Write the report in :data:`MUTANTS` order; ``merge``: the rows of mutants not rerun are
    kept from the last report (``--only`` reruns some)."""
    old = {}
    if merge and path.is_file():
        with path.open(newline="", encoding="utf-8") as fh:
            old = {r["id"]: r for r in csv.DictReader(fh)}
    new = {r["id"]: r for r in rows}
    out = [new.get(m.id) or old.get(m.id) for m in MUTANTS]
    out = [r for r in out if r]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, FIELDS, restval="", extrasaction="ignore")
        w.writeheader()
        w.writerows(out)
    return out


def summary(rows: list[dict]) -> None:
    """The kill rate (a mutant is killed when its label's tests or its own tests fail); which
    survive, and which are equivalent for their label's tests (and must then be killed by their
    own ``tests``)."""
    live = [r for r in rows if r["outcome"] != "stale"]
    killed = sum(r["outcome"] == "killed" for r in live)
    equivalent = sum(r["outcome"] != "killed" and bool(r["equivalent"]) for r in live)
    by_label = [r for r in live if r["label"] and not r["equivalent"]]
    k_label = sum(r["label_outcome"] == "killed" for r in by_label)
    print(f"killed {killed} of {len(live)} mutants"
          + (f" ({killed / len(live):.0%})" if live else "")
          + f"; {equivalent} survivor(s) shown equivalent, "
          + f"{len(live) - killed - equivalent} not; by their label's tests alone {k_label} of "
          + f"{len(by_label)} not equivalent for their label")
    for r in rows:
        if r["outcome"] != "killed":
            print(f"  {r['id']}: {r['outcome']}" + (f", equivalent: {r['equivalent']}"
                                                     if r["equivalent"] else " (NOT shown equivalent)"))
        elif r["label"] and r["label_outcome"] != "killed":
            print(f"  {r['id']}: survives {r['label']}'s tests"
                  + (f", equivalent for them: {r['equivalent']}" if r["equivalent"] else
                     " (NOT shown equivalent)"))


if __name__ == "__main__":
    raise SystemExit(main())
