"""SymPy derivations behind the LIME closed forms of chapter 6.

:func:`symbolic_meanfield_wide` (the mean field, wide kernel, one head) and
:func:`symbolic_chain` (the dynamic programme over the number of kept tokens, checked against
the sum over all perturbations of a short document, for deletion and replacement, for lime's law
and for independent removal).
"""

from __future__ import annotations

import itertools

__all__ = ["symbolic_chain", "symbolic_meanfield_wide"]


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




def symbolic_chain(n: int = 3, law: str = "lime", removal: str = "delete"):
    """The dynamic programme over the number of kept tokens, in SymPy, against the direct sum over
    the ``2^n`` perturbations of an ``n``-token document.

    Symbols: ``x_{t,q}`` stands for ``exp(-lambda G_t(q))`` (token ``t`` kept at position ``q``;
    replacement: ``x_t`` kept, ``y_t`` replaced), ``h_{t,q}`` for its numerator term
    ``G_t(q) (c_t + r(q))``, ``h_0`` for [CLS]'s; ``law="lime"``: a kept set of size ``m``
    weighs ``omega_m / C(n, m)``; ``law="bernoulli"``: ``p^m (1-p)^(n-m)``. Returns a dict with
    the symbols, the recursions' results ``gamma_dp`` (``[Gamma_0, ..., Gamma_n]``: the sum of
    ``(h_0 + M) prod x`` over all subsets, and over those containing ``t``, weighted) and the direct
    sums ``gamma_direct``, and ``difference`` (every entry simplifies to 0).
    """
    import sympy as sp

    if law not in ("lime", "bernoulli") or removal not in ("delete", "replace"):
        raise ValueError("law must be 'lime' or 'bernoulli', removal 'delete' or 'replace'")
    h0, p = sp.Symbol("h_0"), sp.Symbol("p", positive=True)
    om = sp.symbols(f"omega_0:{n + 1}", positive=True)
    if removal == "delete":
        x = {(t, q): sp.Symbol(f"x_{{{t},{q}}}", positive=True) for t in range(1, n + 1)
             for q in range(1, t + 1)}
        h = {(t, q): sp.Symbol(f"h_{{{t},{q}}}") for t in range(1, n + 1) for q in range(1, t + 1)}
        kept = lambda t, c: (x[t, c + 1], h[t, c + 1])   # noqa: E731 - kept after c kept tokens
        drop = lambda t: (sp.Integer(1), sp.Integer(0))   # noqa: E731
    else:
        xs, ys = sp.symbols(f"x_1:{n + 1}", positive=True), sp.symbols(f"y_1:{n + 1}", positive=True)
        hs, gs = sp.symbols(f"h_1:{n + 1}"), sp.symbols(f"g_1:{n + 1}")
        kept = lambda t, c: (xs[t - 1], hs[t - 1])         # noqa: E731
        drop = lambda t: (ys[t - 1], gs[t - 1])            # noqa: E731

    def weight(m):
        return om[m] / sp.binomial(n, m) if law == "lime" else p ** m * (1 - p) ** (n - m)

    direct = [0] * (n + 1)
    for z in itertools.product((0, 1), repeat=n):
        c, prod, M = 0, sp.Integer(1), h0
        for t in range(1, n + 1):
            e, hh = kept(t, c) if z[t - 1] else drop(t)
            prod, M, c = prod * e, M + hh, c + z[t - 1]
        term = weight(c) * prod * M
        direct[0] += term
        for t in range(1, n + 1):
            if z[t - 1]:
                direct[t] += term

    def kc(t, c):   # probability weight of "kept" for step t from state c (scaled form for lime)
        return sp.Rational(c + 1, t) if law == "lime" else p

    def dc(t, c):
        return sp.Rational(t - c, t) if law == "lime" else 1 - p

    # forward: a[t][c], aM[t][c] (lime: averages over kept subsets of size c of tokens 1..t)
    a, aM = [[sp.Integer(1)]], [[sp.Integer(0)]]
    for t in range(1, n + 1):
        ra, rm = [], []
        for c in range(t + 1):
            va, vm = 0, 0
            if c < t:
                e, hh = drop(t)
                va += dc(t, c) * e * a[t - 1][c]
                vm += dc(t, c) * e * (aM[t - 1][c] + hh * a[t - 1][c])
            if c > 0:
                e, hh = kept(t, c - 1)
                va += kc(t, c - 1) * e * a[t - 1][c - 1]
                vm += kc(t, c - 1) * e * (aM[t - 1][c - 1] + hh * a[t - 1][c - 1])
            ra.append(va)
            rm.append(vm)
        a.append(ra)
        aM.append(rm)
    final = [om[m] if law == "lime" else sp.Integer(1) for m in range(n + 1)]
    dp = [sum(final[m] * (aM[n][m] + h0 * a[n][m]) for m in range(n + 1))] + [0] * n
    # backward: b[c], bM[c] from the end; combine with the stored forward rows
    b, bM = list(final), [sp.Integer(0)] * (n + 1)
    for t in range(n, 0, -1):
        acc = 0
        nb, nbM = [], []
        for c in range(t):
            e, hh = kept(t, c)
            acc += kc(t, c) * e * (a[t - 1][c] * (bM[c + 1] + (h0 + hh) * b[c + 1])
                                   + aM[t - 1][c] * b[c + 1])
            er, hr = drop(t)
            nb.append(dc(t, c) * er * b[c] + kc(t, c) * e * b[c + 1])
            nbM.append(dc(t, c) * er * (bM[c] + hr * b[c]) + kc(t, c) * e * (bM[c + 1] + hh * b[c + 1]))
        dp[t] = acc
        b, bM = nb + [0], nbM + [0]
    diff = [sp.simplify(sp.expand(dp[i] - direct[i])) for i in range(n + 1)]
    return {"h0": h0, "p": p, "omega": om, "gamma_dp": dp, "gamma_direct": direct,
            "difference": diff}
