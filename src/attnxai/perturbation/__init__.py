"""Which explanation is faithful? Perturbation metrics (ferret's AOPC comprehensiveness,
sufficiency and tau-LOO, and the book's own deletion and insertion curves) for any model of the
package's interface (the explanations themselves come from :func:`attnxai.explain`: pass its
``ids`` and ``token_scores``).

**What is measured.** ``p(x)`` is the model's **probability** of the explained class ``target``
(default 1, "positive", the logit every explainer of the paper explains): the softmax of the
model's logits, computed in float64. It is the quantity ferret uses (``logits.softmax(-1)[:,
target]``), so our numbers are comparable with ferret's; it is kept fixed everywhere (chapter 7
explains why it is not the raw logit 1 the explainers explain). A document is ``[CLS]`` followed by
``n`` word positions; ``[CLS]`` is never removed (ferret's ``remove_first_last=True``). A score
vector has one entry per word position (``[CLS]`` excluded).

**Equal to ferret, exactly when.** Comprehensiveness, sufficiency and tau-LOO equal those of
ferret's own evaluators (g8a9/ferret at 22935f8, run on the same float64 model:
``tests/experiment/test_faithfulness_ferret.py``) to rounding (1e-12; float32 models only to float32 rounding)
when the scores have **no ties**, for deletion (ferret's default ``remove_tokens=True``) and for
replacement with ferret's ``[MASK]`` read as UNK (``remove_tokens=False``), under the positive
rule (ferret's default) and the signed rule; tau-LOO with deletion only (ferret always deletes),
and where no two leave-one-out drops are within ``LOO_TIE`` of each other ("tau-LOO and ties").
With **ties** of the scores see "Tie orders" below: no fixed rule reproduces ferret on every
tied vector.
ferret's signed rule itself raises ``ValueError`` on numpy >= 1.25 (it compares an array with
``[]``). The curves and their areas are **not ferret's**: ferret has no curves.

**Perturbations** (:data:`PERTURBATIONS`)::

    "replace"   a removed token is replaced by UNK in place (positions do not move): what the
                paper's theorems assume, lime's bow=False with mask_string="UNK"
    "delete"    a removed token is deleted and the later tokens move forward: lime's bow=True,
                and ferret's default (remove_tokens=True)

**Selection rules** (:data:`SELECTIONS`): the ranking a rationale is cut from::

    "positive"  positions with score > 0 only, largest first (ferret's default, only_pos=True)
    "abs"       every position, largest |score| first (ours: ferret has no |score| rule)
    "signed"    every position, largest score first (ferret's only_pos=False)

**Tie orders** (:data:`TIES`, the ``ties`` argument): which of several positions with equal keys a
rationale takes first::

    "position"  the earlier position first (a stable sort of the keys, largest first): the default
    "ferret"    the later position first: a stable ascending sort of the keys, its last k
                entries, reversed: ferret's ``argsort()[-k:][::-1]`` *if* its ``argsort``
                kept ties in position order

ferret calls numpy's default ``argsort`` (``kind="quicksort"``), which promises no order of equal
keys, and the order it gives depends on the length and on numpy's version and build: numpy 1.x's
introsort keeps short arrays (up to 16 entries, its insertion-sort cutoff) in order and reorders
ties in longer ones, and numpy 2's SIMD sorts (numpy 2.4 on this AVX-512 machine) reorder them
from four entries (measured here on random vectors of three tied levels: 10 % of them at n = 4,
75 % at 8, all from 16 on; ``tests/experiment/test_faithfulness_ferret.py`` counts it). So ``"ferret"`` is
ferret's order exactly where that sort leaves ties in position order (tested against ferret's
code there), and on real reviews with ties no fixed rule is; the two orders together show how
much the tie order moves a result. Without ties both orders, and ferret, select the same
positions. Repeated words scored per word (LIME, its limit) tie at every occurrence, so for them
the order matters.

**Metrics** (:func:`evaluate`; the first three are ferret's ``faithfulness_measures.py``,
g8a9/ferret at commit 22935f8; the curves are the book's own). With ``r_q`` the first
``k_q = floor(q n)`` positions of the ranking (``q = 0.1, ..., 1.0``; for "positive" at most the
positive ones)::

    AOPC comprehensiveness = mean_q [ p(x) - p(x without r_q) ]    higher is better
    AOPC sufficiency       = mean_q [ p(x) - p(r_q only) ]         lower is better
    tau-LOO                = Kendall tau-b(scores, p(x) - p(x without t), over positions t),
                             with the ties of "tau-LOO and ties" below
    deletion curve         D(f) = p(x without r_f),  f = 0, 0.05, ..., 1   (area: lower is better)
    insertion curve        I(f) = p(r_f only)                              (area: higher is better)

Exactly as ferret: ``k_q = int(q * n)`` with ``q`` from ``np.arange(0.1, 1.1, 0.1)`` (equal to the
integer ``(10 q) n // 10`` for every n up to 20,000, which is what we compute); a ``q`` with
``k_q = 0`` or whose rationale is the same set as the previous one is left out of the mean; an
explanation with no rationale at all (e.g. no positive score) gets comprehensiveness 0 and
sufficiency 1 (ferret's values). ``n_rationales`` reports how many ``q`` entered the mean. ferret
computes tau-LOO with deletion only; we compute it with both perturbations. The curves use
``k_f = floor(f n)`` and their areas the trapezoidal rule on ``[0, 1]``.

**tau-LOO and ties** (:func:`kendall_tau_loo`, :data:`LOO_TIE`). Kendall's tau-b sums, over
the pairs of positions ``s < t``, ``sign(w_s - w_t) * sign(l_s - l_t)`` (``w`` the scores, ``l``
the leave-one-out drops) and divides by the square root of the product of the numbers of pairs
untied in ``w`` and untied in ``l``; NaN when either number is 0 (one word, constant scores, or
every drop within ``LOO_TIE`` of every other). Two **scores** tie when they are equal (they are the
explanation as given: LIME's word scores tie exactly at a repeated word). Two **drops** tie when
they differ by at most ``LOO_TIE = 2**-36`` (about 1.5e-11), pair by pair (no chaining: drops 0.6
``LOO_TIE`` either side of a third tie with it, not with each other).

Why a tolerance, and an absolute one. The drops are differences of probabilities, whose float64
rounding is absolute where it matters (doubles just below 1 are 2^-53 apart), and the two backends
compute each probability in another order: on random float64 models with init_range up to 3,
saturated attention included, their drops differ by at most 1.3e-14 (500 models,
``tests/experiment/test_faithfulness_ties.py``). With exact ties each backend had ties, and orders, of its
own on different pairs, and tau-LOO depended on the backend on 11 of those 500 models (by up to
0.21, in sign too, or NaN for one backend only). ``LOO_TIE`` is 2^17 units of 2^-53, over 1,000
times the largest difference measured between the backends, and far below any difference of two
words' effects a reader would call real. The backends then give one tau-LOO except where a pair
of drops differs by within twice their difference of ``LOO_TIE`` itself: a threshold on a rounded
number cannot be exact there (chapter 7, ``prop-faith-tau-ties``).

**The drops of a two-class model** are computed from the logit margins ``z = f_c - f_other`` of
the document and ``z'`` of the document without the word, as ``sigmoid(z) - sigmoid(z')``
evaluated on the side of the smaller probabilities (``sigmoid(-z') - sigmoid(-z)`` when
``z + z' > 0``): no two numbers near 1 are subtracted, and the other class's drops are exactly
these negated (the same sigmoids, swapped), so tau-LOO of class 0 is minus that of class 1 bit for
bit, ties and saturated probabilities included, and so is the flipped model's (chapter 7). They
equal ``p(x) - p(x without t)`` computed from the softmaxes to rounding (2.8e-16 at most on the
500 models of ``tests/experiment/test_faithfulness_ties.py``, where 1e-14 is asserted); with
the softmax differences instead, a class whose probabilities are near 1 gets drops rounded to
multiples of 2^-53, two of them equal where the other class's differ, and tau_0 != -tau_1
(``tests/results/test_results_faithfulness.py`` shows one). Other numbers of classes: the softmax
differences.

**Where this departs from ferret**: ferret's tau is ``scipy.stats.kendalltau`` of its drops as
its forward pass rounds them (exact ties only); the two are equal whenever no two distinct drops
lie within ``LOO_TIE`` of each other (``tests/experiment/test_faithfulness_ferret.py`` tests it on every
example and counts those where they do).

**Batched.** For one review and one perturbation every perturbed document any metric needs (all
explainers, rules, sizes, the leave-one-out documents) is collected, equal documents are kept
once, and the model is evaluated once (:class:`Perturber`): on the float64 projections of the single-layer
model (``backend="fast"``, :mod:`attnxai.fastlime.evaluate`, the evaluators the fast LIME uses), or
by the model's own ``forward`` on the collated batch, in chunks (``backend="model"``, any
:class:`~attnxai.model.interface.ClassifierBase`). ``"auto"`` takes the first when it can. Both agree to
rounding on float64 models (their drops to about 1e-14, tau-LOO exactly except at the
threshold: "tau-LOO and ties"; tested); on a float32 model ``"model"`` runs the model's own
float32 forward pass, so it agrees with ``"fast"`` (float64 projections of the same weights) only
to float32 rounding, tau-LOO included.

**In SymPy.** :func:`symbolic_measures` writes every measure of one explanation as an expression
in the probabilities of the perturbed documents (one symbol per kept set), through the same
rankings, sizes and averaging code as :func:`evaluate`: chapter 7 derives its propositions with
it, and the tests check that substituting a model's probabilities gives :func:`evaluate`'s numbers.

**Words and positions.** Attention and gradients score positions. LIME (``bow=True``) and its
closed-form limit score distinct words: at position level every occurrence of a word carries its
word's whole coefficient (the one rule of :mod:`attnxai.words`), so the occurrences tie.

The room's modules: :mod:`~attnxai.perturbation.rankings` (names, inputs, rankings, sizes),
:mod:`~attnxai.perturbation.perturber` (the perturbed documents' probabilities),
:mod:`~attnxai.perturbation.measures` (the measures), :mod:`~attnxai.perturbation.symbolic`
(the measures in SymPy).
"""

from __future__ import annotations

from .measures import (Faithfulness, agreement, comprehensiveness, deletion_curve, evaluate,
                       insertion_curve, kendall_tau_loo, loo_pair_signs, sufficiency, tau_loo)
from .perturber import Perturber, probability
from .rankings import (BACKENDS, CURVE_FRACTIONS, DEFAULT_SELECTIONS, LOO_TIE, METRICS,
                       PERTURBATIONS, QUANTILES, SELECTIONS, TIES, aopc_sizes, curve_sizes,
                       ranking, rationale_sizes)
from .symbolic import loo_tie_sign, symbolic_measures

__all__ = ["BACKENDS", "CURVE_FRACTIONS", "DEFAULT_SELECTIONS", "Faithfulness", "LOO_TIE",
           "METRICS", "PERTURBATIONS", "Perturber", "QUANTILES", "SELECTIONS", "TIES", "agreement",
           "aopc_sizes", "comprehensiveness", "curve_sizes", "deletion_curve", "evaluate",
           "insertion_curve", "kendall_tau_loo", "loo_pair_signs", "loo_tie_sign", "probability",
           "ranking", "rationale_sizes", "sufficiency", "symbolic_measures", "tau_loo"]
