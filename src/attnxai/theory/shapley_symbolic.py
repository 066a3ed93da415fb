"""SymPy derivations of chapter 9: the Shapley weights as a Beta integral, the Shapley, Banzhaf
and LIME values as three weightings of one curve ``delta_j(p)``, and Integrated Gradients as the
gradient theorem integrated along a path (with its completeness).

Every function returns a dict of SymPy expressions; the entries named ``difference`` (or
``differences``) simplify to 0, which ``tests/theory/test_theory_shapley.py`` and the chapter check.
"""

from __future__ import annotations

import itertools

__all__ = ["symbolic_additive_game", "symbolic_beta_integral", "symbolic_game",
           "symbolic_ig_path"]


def symbolic_beta_integral():
    """``int_0^1 p^s (1 - p)^(d-1-s) dp`` for symbolic ``s``, ``d`` (positive integers,
    ``s <= d - 1``) against the Shapley weight ``s! (d-1-s)! / d!``: SymPy's Beta function, and
    the integral computed for every ``s`` of ``d = 1..8`` (``checks``: the differences)."""
    import sympy as sp

    p = sp.Symbol("p", positive=True)
    s, d = sp.symbols("s d", positive=True, integer=True)
    a, b = sp.symbols("a b", positive=True)
    # meijerg=True: SymPy's Meijer-G integration, which is how it finds this integral anyway, asked
    # for first (9 s instead of 33 s spent first on the methods that fail here)
    beta = sp.simplify(sp.integrate(p ** (a - 1) * (1 - p) ** (b - 1), (p, 0, 1), conds="none",
                                    meijerg=True))
    integral = beta.subs({a: s + 1, b: d - s})
    weight = sp.factorial(s) * sp.factorial(d - 1 - s) / sp.factorial(d)
    difference = sp.simplify(sp.gammasimp(integral - weight))
    checks = [sp.integrate(p ** k * (1 - p) ** (n - 1 - k), (p, 0, 1))
              - sp.factorial(k) * sp.factorial(n - 1 - k) / sp.factorial(n)
              for n in range(1, 9) for k in range(n)]
    return {"p": p, "s": s, "d": d, "beta": beta, "integral": sp.gammasimp(integral),
            "weight": weight, "difference": difference, "checks": checks}


def symbolic_game(d: int = 3):
    """A game of ``d`` players with a symbol ``v_S`` for every coalition: the multilinear
    extension ``Phi(p_1..p_d) = sum_S v_S prod_{j in S} p_j prod_{j not in S} (1 - p_j)``, the
    effect ``delta_j(p) = dPhi/dp_j`` on the diagonal, and

    * ``shapley``: ``int_0^1 delta_j(p) dp``, against the defining sum ``shapley_sum``;
    * ``banzhaf``: ``delta_j(1/2)``, against ``banzhaf_sum``;
    * ``efficiency``: ``sum_j delta_j(p) - d Phi(p, ..., p) / dp`` (the chain rule: 0), so that
      ``sum_j phi_j = v(all) - v(empty)``;
    * ``degree``: the degree of ``delta_j`` in ``p`` (``d - 1``), and ``gauss``: the
      Gauss-Legendre rule with ``ceil(d/2)`` nodes on [0, 1] applied to ``delta_j``, which is
      exact (``gauss_difference``, exact roots of the Legendre polynomial).

    ``differences`` lists every difference (each simplifies to 0)."""
    import math

    import sympy as sp

    p = sp.Symbol("p")
    ps = sp.symbols(f"p1:{d + 1}")
    subsets = [S for r in range(d + 1) for S in itertools.combinations(range(d), r)]
    v = {S: sp.Symbol("v_{" + ("".join(str(j + 1) for j in S) or "0") + "}") for S in subsets}
    Phi = sum(v[S] * sp.Mul(*[ps[j] if j in S else 1 - ps[j] for j in range(d)])
              for S in subsets)
    diag = {q: p for q in ps}
    delta = [sp.expand(sp.diff(Phi, ps[j]).subs(diag)) for j in range(d)]
    shapley = [sp.expand(sp.integrate(dj, (p, 0, 1))) for dj in delta]
    banzhaf = [sp.expand(dj.subs(p, sp.Rational(1, 2))) for dj in delta]

    def with_j(S, j):
        return tuple(sorted(S + (j,)))

    shapley_sum = [sp.expand(sum(sp.Rational(math.factorial(len(S)) * math.factorial(d - 1 - len(S)),
                                             math.factorial(d)) * (v[with_j(S, j)] - v[S])
                                 for S in subsets if j not in S)) for j in range(d)]
    banzhaf_sum = [sp.expand(sum((v[with_j(S, j)] - v[S]) for S in subsets if j not in S)
                             / 2 ** (d - 1)) for j in range(d)]
    efficiency = sp.expand(sum(delta) - sp.diff(Phi.subs(diag), p))
    total = sp.expand(sum(shapley) - (v[tuple(range(d))] - v[()]))
    n = max(1, math.ceil(d / 2))
    x_ = sp.Symbol("x")
    P = sp.legendre(n, x_)
    roots = sp.Poly(P, x_).all_roots()               # exact (radicals for these n)
    wts = [2 / ((1 - r ** 2) * sp.diff(P, x_).subs(x_, r) ** 2) for r in roots]
    gauss = [sp.expand(sum(wi / 2 * dj.subs(p, (ri + 1) / 2) for ri, wi in zip(roots, wts)))
             for dj in delta]
    gauss_difference = [sp.expand(g - s) for g, s in zip(gauss, shapley)]
    differences = ([sp.expand(a - b) for a, b in zip(shapley, shapley_sum)]
                   + [sp.expand(a - b) for a, b in zip(banzhaf, banzhaf_sum)]
                   + [efficiency, total] + gauss_difference)
    return {"p": p, "v": v, "Phi": Phi, "delta": delta, "shapley": shapley,
            "shapley_sum": shapley_sum, "banzhaf": banzhaf, "banzhaf_sum": banzhaf_sum,
            "efficiency": efficiency, "total": total,
            "degree": [sp.degree(dj, p) for dj in delta], "gauss_nodes": n, "gauss": gauss,
            "gauss_difference": gauss_difference, "differences": differences}


def symbolic_additive_game(d: int = 4):
    """An additive game ``v(S) = c + sum_{j in S} a_j``: ``delta_j(p) = a_j`` for every ``p``, so
    Shapley, Banzhaf and LIME's limit (the profile form: the centred effects averaged with the
    weight ``p (1 - p) q(p)``, plus the slope ``Cov(p, Phi) / Var(p)`` over ``d``, for any law
    ``q`` of the kept fraction, written through its moments ``m_k = int p^k q(p) dp``) all equal
    ``a_j``: the three weightings differ only through the interactions, the dependence of
    ``delta_j`` on ``p``. ``differences``: 0."""
    import sympy as sp

    p = sp.Symbol("p", positive=True)
    c = sp.Symbol("c")
    a = sp.symbols(f"a1:{d + 1}")
    m = sp.symbols("m0:3", positive=True)            # moments of lime's law q of p

    def against_q(expr):
        """int expr(p) q(p) dp for a polynomial of degree <= 2 in p (linearity)."""
        poly = sp.Poly(sp.expand(expr), p)
        return sum(coef * m[k] for (k,), coef in poly.terms())

    Phi = c + p * sum(a)                             # E[v] at kept fraction p
    delta = list(a)
    mean = sum(delta) / d
    Ep = against_q(p) / against_q(1)
    cov = against_q((p - Ep) * Phi) / against_q(1)
    var = against_q((p - Ep) ** 2) / against_q(1)
    main = [against_q(p * (1 - p) * (dj - mean)) / against_q(p * (1 - p)) for dj in delta]
    lime = [sp.simplify(mj + cov / var / d) for mj in main]
    shapley = [sp.integrate(dj, (p, 0, 1)) for dj in delta]
    banzhaf = [dj.subs(p, sp.Rational(1, 2)) for dj in delta]
    differences = ([sp.simplify(x - y) for x, y in zip(shapley, a)]
                   + [sp.simplify(x - y) for x, y in zip(banzhaf, a)]
                   + [sp.simplify(x - y) for x, y in zip(lime, a)])
    return {"p": p, "a": a, "c": c, "moments": m, "Phi": Phi, "shapley": shapley,
            "banzhaf": banzhaf, "lime": lime, "slope": sp.simplify(cov / var),
            "differences": differences}


def symbolic_ig_path(T: int = 3):
    """One head along the path ``sigma`` in [0, 1]: token ``t``'s attention logit
    ``s_t = s0_t + sigma ds_t`` and value score ``u_t = u0_t + sigma du_t`` (the gradient
    theorem's ``a_t`` and ``s_t`` of chapter 3, affine along a straight path), ``f = sum_t
    alpha_t u_t``. Returns ``f``, the per-token path derivative of the module
    :mod:`attnxai.theory.ig_theorem` (``terms``: ``alpha_t (du_t + ds_t (u_t - f))``)
    and the differences ``df/dsigma - sum_t terms`` and the term of token ``t`` minus the chain
    rule's ``(d f / d s_t) ds_t + (d f / d u_t) du_t`` (all 0): completeness follows,
    ``sum_t IG_t = int_0^1 df/dsigma = f(1) - f(0)``."""
    import sympy as sp

    sig = sp.Symbol("sigma")
    s0 = sp.symbols(f"s0_1:{T + 1}")
    ds = sp.symbols(f"ds_1:{T + 1}")
    u0 = sp.symbols(f"u0_1:{T + 1}")
    du = sp.symbols(f"du_1:{T + 1}")
    S = sp.symbols(f"s_1:{T + 1}")
    U = sp.symbols(f"u_1:{T + 1}")
    den = sum(sp.exp(x) for x in S)
    f_free = sum(sp.exp(x) * y for x, y in zip(S, U)) / den
    path = {**{S[t]: s0[t] + sig * ds[t] for t in range(T)},
            **{U[t]: u0[t] + sig * du[t] for t in range(T)}}
    f = f_free.subs(path)
    alpha = [sp.exp(S[t]).subs(path) / den.subs(path) for t in range(T)]
    terms = [alpha[t] * (du[t] + ds[t] * ((u0[t] + sig * du[t]) - f)) for t in range(T)]
    chain = [(sp.diff(f_free, S[t]) * ds[t] + sp.diff(f_free, U[t]) * du[t]).subs(path)
             for t in range(T)]
    differences = [sp.simplify(sp.diff(f, sig) - sum(terms))] + \
        [sp.simplify(a - b) for a, b in zip(terms, chain)]
    return {"sigma": sig, "f": f, "terms": terms, "differences": differences}
