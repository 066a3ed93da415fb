"""LIME meets attention: closed forms for LIME's coefficients on the Section 2 classifier.

Two approximations of LIME's large-sample coefficients for one document ``ids`` (``[CLS]`` first):

:func:`lime_paper`
    The paper's per-token formula (from the authors' code): for feature j at positions ``P_j``,

        beta_j ~ (3/2) (1/K) sum_i sum_{t in P_j} W_l^(i) (alpha_t^(i) v_t^(i) - alpha'_t^(i) v'_t^(i)),

    ``v'_t = W_v (W_e[UNK] + p_t)``, ``alpha'_t`` the [CLS] attention on position t in the document
    made only of UNK (same length, the real document's [CLS] query).

:func:`lime_limit`
    This book's large-sample limit. Conditional on the kept fraction ``p`` it needs the effect
    ``delta_j(p)`` of keeping feature j and the mean output ``Phi(p)``; then (exact identity to
    first order in 1/d, exact for linear models, :func:`attnxai.theory.lime_text.beta_from_effects`)

        beta_j = E_pi[p(1-p)(delta_j(p) - mean_k delta_k(p))] / E_pi[p(1-p)]
                 + Cov_pi(p, Phi(p)) / (d Var_pi(p)),

    the expectations being over lime's (kernel-weighted) law of ``p``: a finite sum over the ``d``
    possible numbers of removed features (``law="discrete"``, exact for this document; evaluated
    at ``n_nodes`` Chebyshev points and interpolated, everything being polynomial in ``p``) or the
    ``d -> infinity`` density on [0, 1] (``law="continuous"``). Any kernel width.

    Each head's output is a ratio ``M/N`` of sums over tokens. ``method="integral"`` (default)
    keeps every feature independently with probability ``p`` and computes ``E[M/N]`` exactly for
    that law with ``1/N = int_0^inf exp(-lambda N) d lambda``: ``E[exp(-lambda N)]`` factorises over
    features, leaving one integral in ``log lambda`` (trapezoidal rule). ``method="meanfield"``
    replaces ``M`` and ``N`` by their means (the "denominators concentrate" argument; it fails
    when a few tokens carry most of a head's attention, as in trained models).

    ``bow=False`` (replacement by UNK, lime's ``bow=False`` with ``mask_string="UNK"``: what the
    paper's theorem assumes) keeps every token in place. ``bow=True`` (deletion, lime's default:
    what the authors ran) removes all occurrences of a word and the later tokens move forward; a kept token
    preceded by ``n`` tokens of other words sits at ``1 + (earlier occurrences of its own word) + B``
    with ``B ~ Binomial(n, p)``, treated as independent across tokens (``positions="binomial"``;
    ``"averaged"`` and ``"mean"`` are cruder), and ``shift=True`` accounts for the later tokens
    moving when word j is kept (one position per word).

Both functions read the model through its float64 projections (:mod:`attnxai.network`, the same
tables the fast LIME evaluates) and never call the model on perturbed documents: they are closed
forms / quadratures, not simulations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.special import gammaln

from .. import validate
from ..checkpoint import Pretrained
from ..fastlime import is_normalized, lime_features
from ..model import AttentionClassifier
from ..network import Projections
from ..threads import one_blas_thread
from .lime_text import (DEFAULT_KERNEL_WIDTH, RemovalLaw, beta_from_effects, continuous_law,
                        removal_law)

__all__ = ["Effects", "Tables", "conditional_effects", "document_features", "lime_limit",
           "lime_limit_heads", "lime_paper", "symbolic_meanfield_wide", "tables", "text_inputs"]

POSITIONS = ("binomial", "averaged", "mean")
LAWS = ("discrete", "continuous")
#: How E[M/N] is computed (``method=``): exactly for independent keeping, or by the mean field.
EXPECTATION_METHODS = ("integral", "meanfield")


# --------------------------------------------------------------------------- inputs
def _as_ids(model: AttentionClassifier, ids) -> np.ndarray:
    """One document's ids as a 1-D int64 array without padding, checked by the model itself."""
    if not isinstance(model, AttentionClassifier):
        raise TypeError(f"model must be an AttentionClassifier, got {type(model).__name__} "
                        "(for a Pretrained, pass pre.model)")
    t = torch.as_tensor(ids) if not isinstance(ids, torch.Tensor) else ids
    if t.dtype.is_floating_point or t.dtype == torch.bool:
        raise TypeError(f"ids must be integers, got {t.dtype}")
    if t.dim() == 1:
        t = t[None]
    if t.dim() != 2 or t.shape[0] != 1:
        raise ValueError(f"explain one document at a time: ids has shape {tuple(t.shape)}")
    model.ids_and_mask(t.long())                       # the model's own checks ([CLS], range...)
    arr = t[0].long().numpy()
    arr = arr[arr != model.pad_id]
    if arr.size < 2:
        raise ValueError("the document has no token after [CLS]: nothing to explain")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)
class Tables:
    """The closed forms' (heads first) view of :class:`attnxai.network.DocumentTables` for one
    document (float64, K heads, T tokens with [CLS] first, L positions).

    A token with id ``x`` at position ``pos`` has attention score ``a[x] + b(pos)`` and value
    score ``c[x] + r(pos)`` (logit ``target``): ``a_tok``, ``c_tok`` (K, T) for the document's
    tokens, ``a_unk``, ``c_unk`` (K,) for UNK, ``b``, ``r`` (K, L) for positions 0..L-1.
    """

    ids: np.ndarray
    a_tok: np.ndarray
    c_tok: np.ndarray
    a_unk: np.ndarray
    c_unk: np.ndarray
    b: np.ndarray
    r: np.ndarray
    n_heads: int
    target: int
    projections: Projections = field(repr=False)

    def pos_scores(self, pos) -> tuple[np.ndarray, np.ndarray]:
        """``b`` and ``r`` at real-valued positions ``pos``: (K, len(pos)) each."""
        b, r = self.projections.at_positions(pos)
        return b.T, r[:, :, self.target].T


def tables(model: AttentionClassifier, ids, target: int = 1) -> Tables:
    """The :class:`Tables` of ``model`` for the document ``ids`` (positions 0..max(max_len, T+2)-1)."""
    arr = _as_ids(model, ids)
    target = validate.target(target, model.n_classes)
    proj = Projections.of(model)
    doc = proj.document(arr, target)
    L = max(model.max_len, arr.size + 2)
    return Tables(ids=arr, a_tok=doc.word_score.T, c_tok=doc.word_value.T, a_unk=doc.unk_score,
                  c_unk=doc.unk_value, b=doc.pos_score[:L].T, r=doc.pos_value[:L].T,
                  n_heads=proj.n_heads, target=target, projections=proj)


def _inputs(model, ids, bow: bool, features) -> tuple[AttentionClassifier, np.ndarray,
                                                     list[np.ndarray]]:
    """``(model, ids, features)`` from what :func:`attnxai.fastlime.explain` takes: a
    :class:`~attnxai.checkpoint.Pretrained` and a text (features = lime's words, so coefficients
    align with ``fastlime.explain(pre, text).words``), or the model and the document's ids
    (features = the distinct ids, or ``features``)."""
    if isinstance(ids, str):
        if not isinstance(model, Pretrained):
            raise TypeError("with a text, pass the Pretrained (model and vocabulary), not "
                            f"{type(model).__name__}")
        arr, feats = text_inputs(model, ids, bow)
        if features is not None:
            raise ValueError("give either a text (features are lime's words) or ids and features")
        return model.model, arr, feats
    if isinstance(model, Pretrained):
        model = model.model
    arr = _as_ids(model, ids)
    return model, arr, _features(model, arr, validate.bow(bow), features)


def document_features(words: Sequence[str], bow: bool) -> list[np.ndarray]:
    """lime's features of a document as arrays of 1-based token positions
    (:func:`attnxai.fastlime.lime_features`, the one grouping)."""
    return lime_features(words, bow)[1]


def _features(model: AttentionClassifier, arr: np.ndarray, bow: bool, features) -> list[np.ndarray]:
    T = arr.size
    if features is None:
        return document_features([str(x) for x in arr[1:]], bow)
    feats = [np.atleast_1d(np.asarray(f, dtype=int)) for f in features]
    flat = np.concatenate(feats) if feats else np.array([], dtype=int)
    if not feats or flat.size != T - 1 or set(flat.tolist()) != set(range(1, T)):
        raise ValueError(f"features must partition the token positions 1..{T - 1} "
                         "(each position in exactly one feature)")
    return feats


def _incidence(feats: list[np.ndarray], T: int) -> np.ndarray:
    A = np.zeros((len(feats), T))
    for j, f in enumerate(feats):
        A[j, f] = 1.0
    return A


# --------------------------------------------------------------------------- the paper's formula
def lime_paper(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True, target: int = 1,
               features: Sequence[Sequence[int]] | None = None, factor: float = 1.5) -> np.ndarray:
    """The paper's approximation of LIME's coefficients, one per feature (lime's order).

    ``beta_j = factor * (1/K) sum_i sum_{t in P_j} (alpha_t w_t - alpha'_t w'_t)`` with
    ``w_t = W_l^(i) v_t^(i)`` (logit ``target``), ``alpha'`` and ``w'`` those of UNK at position t in
    the all-UNK document of the same length (``max_len`` for a ``padding="unk"`` model, as the
    authors' code) with the real document's [CLS] query. ``factor`` = 3/2 as in the paper.
    """
    model, arr, feats = _inputs(model, ids, bow, features)
    tb = tables(model, arr, target)
    T = arr.size
    Lr = model.max_len if model.padding == "unk" else T  # length of the real (padded) document
    pos = np.arange(Lr)
    a_real = np.concatenate([tb.a_tok, np.repeat(tb.a_unk[:, None], Lr - T, axis=1)], axis=1)
    c_real = np.concatenate([tb.c_tok, np.repeat(tb.c_unk[:, None], Lr - T, axis=1)], axis=1)
    s_real = a_real + tb.b[:, pos]
    alpha = _softmax(s_real)
    w = c_real + tb.r[:, pos]
    s_unk = np.concatenate([tb.a_tok[:, :1], np.repeat(tb.a_unk[:, None], Lr - 1, axis=1)], axis=1) + tb.b[:, pos]
    alpha_u = _softmax(s_unk)
    w_u = tb.c_unk[:, None] + tb.r[:, pos]
    per_pos = (alpha * w - alpha_u * w_u).mean(axis=0)[:T]
    return factor * (_incidence(feats, T) @ per_pos)


def _softmax(s: np.ndarray) -> np.ndarray:
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


# --------------------------------------------------------------------------- the mean-field limit
@dataclass
class Effects:
    """Conditional effects at the nodes of lime's law of the kept fraction ``p``: ``delta``
    (n_nodes, d) the effect of keeping each feature, ``phi`` (n_nodes,) the mean output, per head
    too (``delta_heads`` (K, n_nodes, d), ``phi_heads`` (K, n_nodes))."""

    law: RemovalLaw
    delta: np.ndarray
    phi: np.ndarray
    delta_heads: np.ndarray
    phi_heads: np.ndarray
    features: list[np.ndarray] = field(default_factory=list)


def _law(d: int, kernel_width: float, law: str, n_nodes: int) -> RemovalLaw:
    if law not in LAWS:
        raise ValueError(f"law must be one of {LAWS}, got {law!r}")
    return removal_law(d, kernel_width) if law == "discrete" else continuous_law(kernel_width, n_nodes)


def conditional_effects(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True,
                        kernel_width: float = DEFAULT_KERNEL_WIDTH, target: int = 1, features=None,
                        law: str = "discrete", positions: str = "binomial",
                        method: str = "integral", shift: bool = True, n_nodes: int = 25,
                        lambda_step: float = 0.7) -> Effects:
    """The effects ``delta_j(p)`` and the mean output ``Phi(p)`` that :func:`lime_limit` integrates,
    at the nodes of lime's law of the kept fraction ``p``.

    ``method="integral"``: given ``p`` every feature is kept independently with probability ``p``
    and each head's ``E[M/N]`` is computed exactly (for that independent law) from
    ``1/N = int_0^inf exp(-lambda N) d lambda``: the expectation of ``exp(-lambda N)`` factorises
    over features, leaving a one-dimensional integral in ``log lambda`` (trapezoidal rule, step
    ``lambda_step``). ``method="meanfield"``: numerator and denominator replaced by their means
    (first order in 1/d; breaks down when one token takes most of a head's attention).

    Deletion only: ``positions="binomial"`` averages each kept token's contribution over its
    position ``1 + o_t + B``, ``B ~ Binomial(n_t, p)``, inside the integral (exact for independent
    positions); ``"averaged"`` averages ``exp(score)`` and ``exp(score) * value`` over ``B`` first
    (cheaper, cruder); ``"mean"`` puts every token at its mean position (crude: the sinusoidal
    code oscillates with period ~6 positions in its first coordinates). ``shift=True`` (with
    ``method="integral"`` and ``positions="binomial"``; ignored otherwise) also accounts for the
    later tokens moving when word j is kept rather than deleted: each later token's law of
    positions is recomputed given ``z_j`` (one position per word: a word's second and further
    occurrences before a token are not counted, which keeps the expansion stable).

    Everything is a smooth (polynomial) function of ``p``: for ``law="discrete"`` with more than
    ``n_nodes`` values of ``p`` the effects are computed at ``n_nodes`` Chebyshev-Lobatto points and
    interpolated (barycentric) to the ``d`` values.
    """
    model, arr, feats = _inputs(model, ids, bow, features)
    nu = validate.kernel_width(kernel_width, allow_inf=True)
    removal = "delete" if validate.bow(bow) else "replace"
    validate.choice(law, "law", LAWS)
    validate.choice(positions, "positions", POSITIONS)
    validate.choice(method, "method", EXPECTATION_METHODS)
    if not lambda_step > 0:
        raise ValueError(f"lambda_step must be > 0, got {lambda_step!r}")
    if int(n_nodes) < 3:
        raise ValueError(f"n_nodes must be >= 3, got {n_nodes!r}")
    if removal == "delete" and model.padding == "unk":
        raise NotImplementedError("bow=True (deletion) is only derived for padding='mask' models "
                                  "(with UNK padding the pad tokens move with the deletions)")
    lw = _law(len(feats), nu, law, int(n_nodes))
    tb = tables(model, arr, target)
    # Many small matrix products: a multi-threaded BLAS only adds overhead (and contention).
    with one_blas_thread():
        return _effects(model, tb, feats, removal, lw, law, positions, method, shift, int(n_nodes),
                        lambda_step)


def _effects(model, tb, feats, removal, lw, law, positions, method, shift, n_nodes, lambda_step):
    st = _TokenStates(model, tb, feats, removal)
    if law == "discrete" and lw.p.size > n_nodes:
        lo, hi = lw.p.min(), lw.p.max()
        nodes = lo + (hi - lo) * (1 - np.cos(np.pi * np.arange(n_nodes) / (n_nodes - 1))) / 2
    else:
        nodes = lw.p
    K, n = tb.n_heads, nodes.size
    delta = np.empty((K, n, len(feats)))
    phi = np.empty((K, n))
    mixture = removal == "delete" and positions == "binomial"
    kept = [st.kept(p, "mean" if positions == "mean" else "binomial") for p in nodes]
    for k in range(K):
        if method == "integral":
            lam = _lambda_grid(st, k, lambda_step)
            mix = st.position_mixture(k, lam, nodes, shift=shift) if mixture else None
        for i, p in enumerate(nodes):
            if method == "meanfield":
                delta[k, i], phi[k, i] = _meanfield(st, kept[i], k, p, shift=False)
            elif mixture:
                extra = (mix[2][:, i], mix[3][:, i]) if shift else (None, None)
                delta[k, i], phi[k, i] = _integral(st, k, p, lam, mix[0][i], mix[1][i], None, None, *extra)
            else:
                delta[k, i], phi[k, i] = _integral(st, k, p, lam, *st.transforms(k, lam, kept[i]))
    if nodes is not lw.p:
        from scipy.interpolate import BarycentricInterpolator
        delta = np.moveaxis(BarycentricInterpolator(nodes, np.moveaxis(delta, 1, 0))(lw.p), 0, 1)
        phi = BarycentricInterpolator(nodes, phi.T)(lw.p).T
    return Effects(lw, delta.mean(axis=0), phi.mean(axis=0), delta, phi, feats)


class _TokenStates:
    """Per head, the contribution ``(G, H) = (exp(score), exp(score) * value score)`` of every
    token when kept and when removed, with a common per-head scale (ratios are unchanged).

    Replacement: kept = the token in place, removed = UNK in place. Deletion: removed = nothing;
    kept = the token at position ``1 + o_t + B``, ``B ~ Binomial(n_t, p)`` (``o_t`` earlier
    occurrences of its own word, ``n_t`` earlier tokens of other words). ``C[j, t]`` is the number
    of occurrences of word j before token t (0 for t in j), for the shift of later tokens.
    """

    def __init__(self, model, tb: Tables, feats, removal: str):
        T = tb.ids.size
        self.removal, self.tb, self.T = removal, tb, T
        self.A = _incidence(feats, T)[:, 1:]                  # (d, T-1)
        self.owner = np.zeros(T - 1, dtype=int)
        for j, f in enumerate(feats):
            self.owner[np.asarray(f) - 1] = j
        pos = np.arange(T)
        if removal == "replace":
            s_tok = tb.a_tok + tb.b[:, pos]
            s_unk = tb.a_unk[:, None] + tb.b[:, pos]
            self.shift = np.maximum(s_tok.max(1), s_unk.max(1))
            G = np.exp(s_tok - self.shift[:, None])
            Gu = np.exp(s_unk - self.shift[:, None])
            H = G * (tb.c_tok + tb.r[:, pos])
            Hu = Gu * (tb.c_unk[:, None] + tb.r[:, pos])
            self.g0, self.h0 = G[:, 0].copy(), H[:, 0].copy()
            if model.padding == "unk":  # UNK padding up to max_len: a constant part
                pp = np.arange(T, model.max_len)
                gp = np.exp(tb.a_unk[:, None] + tb.b[:, pp] - self.shift[:, None])
                self.g0 += gp.sum(1)
                self.h0 += (gp * (tb.c_unk[:, None] + tb.r[:, pp])).sum(1)
            self._kept = (G[:, 1:], H[:, 1:], np.zeros_like(G[:, 1:]), np.zeros_like(G[:, 1:]))
            self.Gr, self.Hr = Gu[:, 1:], Hu[:, 1:]
            self.C = np.zeros_like(self.A)
        else:
            o = np.zeros(T - 1, dtype=int)
            C = np.zeros((len(feats), T - 1))
            seen = np.zeros(len(feats), dtype=int)
            for t in range(T - 1):
                j = self.owner[t]
                o[t] = seen[j]
                C[:, t] = seen
                C[j, t] = 0
                seen[j] += 1
            self.C = C
            self.C1 = np.minimum(C, 1.0)  # shifted or not (shift=True counts one shift per word)
            self.base = 1 + o
            self.n_other = np.arange(T - 1) - o
            self.shift = tb.a_tok.max(1) + tb.b.max(1)
            self.ea = np.exp(tb.a_tok[:, 1:] - tb.a_tok.max(1, keepdims=True))   # (K, T-1)
            self.eb = np.exp(tb.b - tb.b.max(1, keepdims=True))                  # (K, L)
            self.g0 = np.exp(tb.a_tok[:, 0] + tb.b[:, 0] - self.shift)
            self.h0 = self.g0 * (tb.c_tok[:, 0] + tb.r[:, 0])
            self.Gr = np.zeros((tb.n_heads, T - 1))
            self.Hr = np.zeros((tb.n_heads, T - 1))
            kk = np.arange(T)
            idx = np.minimum(self.base[:, None] + kk[None, :], tb.b.shape[1] - 2)
            ebr = self.eb * tb.r
            # (4, K, T-1, T): exp(b), exp(b) r at 1 + o_t + k, and at one position further
            self._gath = np.stack([self.eb[:, idx], ebr[:, idx], self.eb[:, idx + 1], ebr[:, idx + 1]])
        self._erem: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def pmf(self, p: float, fewer: int = 0) -> np.ndarray:
        """(T-1, T): P(B = k) for B ~ Binomial(n_t - fewer, p), the kept tokens of other words
        before t (``fewer=1``: leaving one of them out)."""
        kk = np.arange(self.T)[None, :]
        n = np.maximum(self.n_other - fewer, 0)[:, None]
        valid = kk <= n
        if 0.0 < p < 1.0:
            logc = gammaln(n + 1) - gammaln(kk + 1) - gammaln(np.maximum(n - kk, 0) + 1)
            logp = logc + kk * np.log(p) + (n - kk) * np.log1p(-p)
            return np.where(valid, np.exp(np.where(valid, logp, 0.0)), 0.0)
        return (kk == (0 if p == 0.0 else n)).astype(float) * np.ones((self.T - 1, 1))

    def bounds(self, k: int) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """Per feature: (smallest, largest) G when kept (over the possible positions), G removed."""
        if self.removal == "replace":
            G = self.A @ self._kept[0][k]
            return (G, G), self.A @ self.Gr[k]
        eb = self.eb[k, 1:self.T]
        return (self.A @ (self.ea[k] * eb.min()), self.A @ (self.ea[k] * eb.max())), self.A @ self.Gr[k]

    def kept(self, p: float, positions: str):
        """(G, H, dG, dH) of each kept token at kept fraction ``p``, averaged over its position
        (deletion): (K, T-1) each; ``dG``, ``dH`` the change for one more token in front."""
        if self.removal == "replace":
            return self._kept
        tb = self.tb
        c = tb.c_tok[:, 1:]
        if positions == "binomial":
            EB, EBR, EB1, EBR1 = np.einsum("tk,citk->cit", self.pmf(p), self._gath)
        else:
            pos = self.base + p * self.n_other
            m = pos.size
            bb, rr = tb.pos_scores(np.concatenate([pos, pos + 1]))
            bb = np.exp(bb - tb.b.max(axis=1, keepdims=True))
            EB, EB1 = bb[:, :m], bb[:, m:]
            EBR, EBR1 = EB * rr[:, :m], EB1 * rr[:, m:]
        G = self.ea * EB
        H = self.ea * (c * EB + EBR)
        dG = self.ea * (EB1 - EB)
        dH = self.ea * (c * (EB1 - EB) + (EBR1 - EBR))
        return G, H, dG, dH

    def transforms(self, k: int, lam: np.ndarray, kept) -> tuple[np.ndarray, ...]:
        """Per feature and lambda: ``E[exp(-lambda N_j)]`` and ``E[M_j exp(-lambda N_j)]`` when kept
        and when removed, (L, d) each, for fixed (position-averaged) contributions."""
        A = self.A
        FG, FH = A @ kept[0][k], A @ kept[1][k]
        lam = lam[:, None]
        eG = np.exp(-lam * FG)
        hit = self._erem.get(k)
        if hit is None or hit[0].shape != lam.shape or not np.array_equal(hit[0], lam):
            FGr, FHr = A @ self.Gr[k], A @ self.Hr[k]
            e = np.exp(-lam * FGr)
            hit = (lam.copy(), e, FHr * e)
            self._erem[k] = hit
        return eG, FH * eG, hit[1], hit[2]

    def position_mixture(self, k: int, lam: np.ndarray, nodes: np.ndarray, shift: bool = False):
        """Deletion: for every node p, (L, d) ``E[exp(-lambda N_j)]`` and ``E[M_j exp(-lambda N_j)]``
        of a kept word, each of its tokens at its own random position (independent).

        With ``shift=True`` also, per token, how its log-transform ``e_t = log E[exp(-lambda G_t)]``
        and its ratio ``r_t = E[H_t exp(-lambda G_t)] / E[exp(-lambda G_t)]`` change when one more
        token before it is kept rather than deleted (``D``, ``Dr``, (n, L, T-1) each): positions
        ``1 + o_t + 1 + B'`` against ``1 + o_t + B'`` with ``B' ~ Binomial(n_t - 1, p)``.
        """
        T, n, nl = self.T, nodes.size, lam.size
        pmfs = np.stack([self.pmf(p) for p in nodes], axis=1)   # (T-1, n, T)
        if shift:
            pm1 = np.stack([self.pmf(p, fewer=1) for p in nodes], axis=1)
            dE = np.zeros((2, T - 1, n, nl))   # e_t^(z) - e_t, z = 0, 1
            rz = np.zeros((2, T - 1, n, nl))   # r_t^(z)
        logE = np.empty((T - 1, n, nl))
        rat = np.empty((T - 1, n, nl))
        c = self.tb.c_tok[k, 1:]
        lam_col = lam[:, None]
        for t in range(T - 1):
            w = self.n_other[t] + 1
            g = self._gath[0, k, t, :w + 1]
            G = self.ea[k, t] * g                                # exp(score) at its positions
            H = self.ea[k, t] * (c[t] * g + self._gath[1, k, t, :w + 1])
            E = np.exp(-lam_col * G)                             # (L, w + 1)
            EH = E * H
            P = pmfs[t, :, :w]                                   # (n, w)
            EL = np.maximum(P @ E[:, :w].T, 1e-300)              # (n, L)
            logE[t] = np.log(EL)
            rat[t] = (P @ EH[:, :w].T) / EL
            if shift:
                if w > 1:
                    Q = pm1[t, :, :w - 1]                        # Binomial(n_t - 1, p)
                    for z, sl in ((0, slice(0, w - 1)), (1, slice(1, w))):
                        Ez = np.maximum(Q @ E[:, sl].T, 1e-300)
                        dE[z, t] = np.log(Ez) - logE[t]
                        rz[z, t] = (Q @ EH[:, sl].T) / Ez
                else:
                    rz[:, t] = rat[t]
        KE = np.exp(np.einsum("tnl,jt->nlj", logE, self.A, optimize=True))   # (n, L, d)
        KH = KE * np.einsum("tnl,jt->nlj", rat, self.A, optimize=True)
        if shift:
            rz = rz - rat[None]
            return KE, KH, np.moveaxis(dE, 1, 3), np.moveaxis(rz, 1, 3)   # (2, n, L, T-1)
        return KE, KH


def _meanfield(st: _TokenStates, kept, k: int, p: float, shift: bool = True):
    G, H, dG, dH = (x[k] for x in kept)
    if not shift:
        dG = dH = np.zeros_like(G)
    Gr, Hr, A, C = st.Gr[k], st.Hr[k], st.A, st.C
    N = st.g0[k] + p * G.sum() + (1 - p) * Gr.sum()
    M = st.h0[k] + p * H.sum() + (1 - p) * Hr.sum()
    FG, FH, FGr, FHr = A @ G, A @ H, A @ Gr, A @ Hr
    SN, SM = p * (C @ dG), p * (C @ dH)        # deletion: shift of the later tokens
    others = 1.0 - A                           # summed directly: no cancellation when j dominates
    NR = st.g0[k] + others @ (p * G + (1 - p) * Gr)
    MR = st.h0[k] + others @ (p * H + (1 - p) * Hr)
    on = (MR + (1 - p) * SM + FH) / (NR + (1 - p) * SN + FG)
    off = (MR - p * SM + FHr) / (NR - p * SN + FGr)
    return on - off, M / N


def _lambda_grid(st: _TokenStates, k: int, step: float) -> np.ndarray:
    """Nodes ``lambda = exp(y)``, ``y`` on a grid of step ``step`` from ``1e-10 / N_max`` to
    ``40 / N_min`` (``N`` the denominator over every configuration): ``int_0^inf exp(-lambda N)
    d lambda`` is then computed by the trapezoidal rule in ``y``, whose error for such integrands
    decays like ``exp(-pi^2 / step)``, with truncation errors below 1e-10 relative."""
    G, Gr = st.bounds(k)
    n_max = st.g0[k] + np.maximum(G[1], Gr).sum()
    n_min = st.g0[k] + np.minimum(G[0], Gr).sum()
    return np.exp(np.arange(np.log(1e-10 / n_max), np.log(40.0 / n_min) + step, step))


def _integral(st: _TokenStates, k: int, p: float, lam: np.ndarray, KE, KH, RE=None, RH=None,
              D=None, Dr=None):
    """E[f_k | p, z_j = 1] - E[f_k | p, z_j = 0] and E[f_k | p] when every feature is kept
    independently with probability p (all the tokens of a feature together).

    ``KE[l, j] = E[exp(-lambda_l N_j)]``, ``KH[l, j] = E[M_j exp(-lambda_l N_j)]`` for feature j
    kept (``N_j``, ``M_j`` its tokens' part of the denominator and numerator), ``RE``, ``RH`` the
    same removed (deletion: 1 and 0). Then ``E[M/N] = int_0^inf E[M exp(-lambda N)] d lambda`` and
    ``E[M exp(-lambda N)] = exp(-lambda g0) prod_j L_j (h0 + sum_j L'_j / L_j)``.
    """
    if RE is None:
        RE, RH = np.ones_like(KE), np.zeros_like(KE)
    g0, h0 = st.g0[k], st.h0[k]
    L = np.maximum(p * KE + (1 - p) * RE, 1e-300)
    Lp = p * KH + (1 - p) * RH
    logL = np.log(L)
    ratio = Lp / L
    S, R = logL.sum(1), ratio.sum(1)               # (L,)
    step = np.log(lam[1] / lam[0])
    base = np.exp(-lam * g0) * step * lam          # trapezoid in log lambda: d lambda = lambda dy
    phi = float(np.sum(base * np.exp(S) * (h0 + R)))
    Sj, Rj = S[:, None] - logL, R[:, None] - ratio   # the other features
    if D is None:
        on = np.exp(Sj) * (KE * (h0 + Rj) + KH)
        off = np.exp(Sj) * (RE * (h0 + Rj) + RH)
    else:
        # deletion: keeping (z=1) or deleting (z=0) word j moves each later token t to positions
        # drawn from 1 + o_t + z + Binomial(n_t - 1, p): D[z], Dr[z] are the changes of its
        # log-transform and of its ratio; its word's factor L_f is recomputed with them (exact for
        # one shifted token per word), and the changes add up over tokens, C[j, t] times each
        kappa = (p * KE / L)[:, st.owner]                         # (L, T-1) share of "kept"
        rho = (KH / np.maximum(KE, 1e-300))[:, st.owner]          # sum of the word's token ratios
        rf = ratio[:, st.owner]
        outs = []
        for z, (Ej, Hj) in ((1, (KE, KH)), (0, (RE, RH))):
            x = np.exp(D[z])
            Lz = 1 + kappa * (x - 1)                              # L_f' / L_f
            dS = np.log(Lz) @ st.C1.T                             # (L, d)
            dR = (kappa * x * (rho + Dr[z]) / Lz - rf) @ st.C1.T
            outs.append(np.exp(Sj + dS) * (Ej * (h0 + Rj + dR) + Hj))
        on, off = outs
    return base @ (on - off), phi


def lime_limit(model: AttentionClassifier | Pretrained, ids, *, bow: bool = True,
               kernel_width: float = DEFAULT_KERNEL_WIDTH, target: int = 1, features=None,
               law: str = "discrete", positions: str = "binomial", method: str = "integral",
               shift: bool = True, n_nodes: int = 25, lambda_step: float = 0.7) -> np.ndarray:
    """LIME's large-sample coefficients for the attention classifier (module docstring).

    Inputs as :func:`attnxai.fastlime.explain`: ``lime_limit(pre, text)`` (a text in
    :func:`attnxai.normalize_for_lime` form) returns one coefficient per word of
    ``fastlime.explain(pre, text).words``, in that order; ``lime_limit(pre.model, ids)`` one per
    distinct id (out-of-vocabulary words share the UNK id, so fewer than lime's words: pass the
    text, or ``features``).

    One coefficient per feature in lime's order (``bow=True``: distinct tokens by first occurrence;
    ``bow=False``: positions; ``bow=True`` deletes words as lime does, ``bow=False`` replaces them
    by UNK); ``features`` overrides the grouping (a partition of positions 1..T-1, e.g. from lime's
    words when distinct words share an id). ``law``:
    ``"discrete"`` (the exact law of lime's draws for this d) or ``"continuous"`` (d -> infinity).
    """
    eff = conditional_effects(model, ids, bow=bow, kernel_width=kernel_width, target=target,
                              features=features, law=law, positions=positions, method=method,
                              shift=shift, n_nodes=n_nodes, lambda_step=lambda_step)
    return beta_from_effects(eff.law, eff.delta, eff.phi)


def lime_limit_heads(model: AttentionClassifier, ids, **kwargs) -> np.ndarray:
    """:func:`lime_limit` of each head's own output ``W_l^(i) v~^(i)``: (K, d). Their mean over heads
    is :func:`lime_limit` of ``f`` (LIME's limit is linear in the explained function)."""
    eff = conditional_effects(model, ids, **kwargs)
    return np.stack([beta_from_effects(eff.law, eff.delta_heads[k], eff.phi_heads[k])
                     for k in range(eff.delta_heads.shape[0])])


# --------------------------------------------------------------------------- SymPy
def symbolic_meanfield_wide():
    """The mean-field limit for one head, replacement, wide kernel (p uniform on [0, 1]), in SymPy.

    Kept fraction p: denominator ``N(p) = A + B p`` and numerator ``M(p) = C + E p`` (``A`` = the
    [CLS] term plus every token replaced by UNK, ``A + B`` = the document; same for ``C``, ``E``).
    Keeping token j instead of UNK changes them by ``dg`` and ``dh``; to first order in 1/d its
    effect is ``delta_j(p) = (dh - Phi(p) dg) / N(p)`` with ``Phi = M / N``. Returns a dict with the
    symbols, ``delta``, ``phi``, ``main`` = ``int_0^1 6 p (1-p) delta_j(p) dp`` (the weight
    ``p(1-p)/E[p(1-p)]``) and ``slope`` = ``Cov(p, Phi)/Var(p) = 12 int_0^1 (p - 1/2) Phi(p) dp``;
    then ``beta_j = main_j - mean_k main_k + slope / d`` (:func:`~attnxai.theory.lime_text.beta_from_effects`).
    """
    import sympy as sp

    p = sp.Symbol("p", positive=True)
    A, B, C, E = sp.symbols("A B C E", real=True)
    dg, dh = sp.symbols("Delta_g Delta_h", real=True)
    N, M = A + B * p, C + E * p
    phi = M / N
    delta = (dh - phi * dg) / N
    Ap = sp.Symbol("A", positive=True)
    Bp = sp.Symbol("B", positive=True)
    sub = {A: Ap, B: Bp}
    main = sp.simplify(sp.integrate(sp.expand(6 * p * (1 - p) * sp.cancel(delta.subs(sub))), (p, 0, 1)))
    slope = sp.simplify(sp.integrate(sp.apart(12 * (p - sp.Rational(1, 2)) * phi.subs(sub), p), (p, 0, 1)))
    return {"p": p, "A": Ap, "B": Bp, "C": C, "E": E, "dg": dg, "dh": dh,
            "N": N.subs(sub), "phi": phi.subs(sub), "delta": delta.subs(sub), "main": main, "slope": slope}


# --------------------------------------------------------------------------- text-level helpers
def text_inputs(pre: Pretrained, text: str, bow: bool = True) -> tuple[np.ndarray,
                                                                      list[np.ndarray]]:
    """``(ids, features)`` for a text in :func:`attnxai.normalize_for_lime` form: the model's ids
    (``[CLS]`` first) and lime's features (grouped by word string, as lime groups them, even when
    distinct words share an id such as UNK)."""
    validate.text(text)
    if not is_normalized(text):
        raise ValueError("the closed forms need the text in normalize_for_lime form (lowercase "
                         "[0-9a-z] tokens, single spaces), where lime's words are the model's "
                         "tokens: pass attnxai.normalize_for_lime(text)")
    words = text.split()
    ids = np.asarray(pre.vocab.encode(text, pre.model.max_len))
    if ids.size != len(words) + 1:
        raise ValueError("text is not in normalize_for_lime form (its words and the model's tokens "
                         "differ, or it is longer than the model accepts): normalise it first")
    return ids, document_features(words, bow)
