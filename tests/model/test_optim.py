"""LazyAdamW (attnxai.model.optim): torch's AdamW bit for bit on dense gradients and on sparse
gradients of every row; on sparse gradients of some rows, the update its docstring states, checked
against a float64 loop written from that statement (no torch optimiser code), rows left alone."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch

from attnxai.model.optim import LazyAdamW

HYPER = dict(lr=3e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)


def _sparse(rows: torch.Tensor, values: torch.Tensor, shape) -> torch.Tensor:
    return torch.sparse_coo_tensor(rows[None], values, shape, check_invariants=True)


@pytest.mark.parametrize("fused", [True, False])
def test_dense_and_all_rows_are_adamw_bit_for_bit(fused):
    """Dense gradients, and sparse gradients holding every row (in a shuffled order), give
    torch.optim.AdamW's weights and moments exactly, through a changing learning rate."""
    g = torch.Generator().manual_seed(0)
    w0 = torch.randn(7, 5, generator=g)
    ref, dense, rows = (torch.nn.Parameter(w0.clone()) for _ in range(3))
    opts = [torch.optim.AdamW([ref], **HYPER, fused=fused or None, foreach=False),
            LazyAdamW([dense], **HYPER, fused=fused), LazyAdamW([rows], **HYPER, fused=fused)]
    scheds = [torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1.0 / (1 + s)) for o in opts]
    for _ in range(6):
        grad = torch.randn(7, 5, generator=g)
        perm = torch.randperm(7, generator=g)
        ref.grad, dense.grad = grad.clone(), grad.clone()
        rows.grad = _sparse(perm, grad[perm], (7, 5))
        for o, s in zip(opts, scheds):
            o.step()
            s.step()
    for p, o in ((dense, opts[1]), (rows, opts[2])):
        assert torch.equal(p, ref)
        for k in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(o.state[p][k], opts[0].state[ref][k]), k


def _reference(w0, grads, lr, b1, b2, eps, wd):
    """The module docstring's update in float64 numpy: rows of each step's gradient (duplicates
    summed) updated with the step count s, the others left as they are."""
    w = w0.copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    for s, (idx, vals) in enumerate(grads, start=1):
        g = np.zeros_like(w)
        np.add.at(g, idx, vals)
        for r in np.unique(idx):
            m[r] = b1 * m[r] + (1 - b1) * g[r]
            v[r] = b2 * v[r] + (1 - b2) * g[r] ** 2
            w[r] = w[r] * (1 - lr * wd)
            w[r] -= lr / (1 - b1 ** s) * m[r] / (np.sqrt(v[r]) / math.sqrt(1 - b2 ** s) + eps)
    return w, m, v


@pytest.mark.parametrize("fused", [True, False])
def test_some_rows_follow_the_stated_update_and_the_others_stay(fused):
    g = torch.Generator().manual_seed(1)
    w0 = torch.randn(12, 3, generator=g, dtype=torch.float64)
    p = torch.nn.Parameter(w0.clone())
    opt = LazyAdamW([p], **HYPER, fused=fused)
    grads, touched = [], set()
    for _ in range(8):
        n = int(torch.randint(1, 9, (), generator=g))
        idx = torch.randint(0, 9, (n,), generator=g)          # rows 9..11 never: left alone
        vals = torch.randn(n, 3, generator=g, dtype=torch.float64)
        grads.append((idx.numpy(), vals.numpy()))
        touched |= set(idx.tolist())
        p.grad = _sparse(idx, vals, p.shape)                 # repeated rows: summed
        opt.step()
    w, m, v = _reference(w0.numpy(), grads, HYPER["lr"], *HYPER["betas"], HYPER["eps"],
                         HYPER["weight_decay"])
    assert np.allclose(p.detach().numpy(), w, rtol=1e-12, atol=1e-12)
    assert np.allclose(opt.state[p]["exp_avg"].numpy(), m, rtol=1e-12, atol=1e-14)
    assert np.allclose(opt.state[p]["exp_avg_sq"].numpy(), v, rtol=1e-12, atol=1e-16)
    untouched = sorted(set(range(12)) - touched)
    assert untouched and torch.equal(p.detach()[untouched], w0[untouched])
    assert float(opt.state[p]["step"]) == 8


def test_state_dict_round_trip_continues_identically():
    g = torch.Generator().manual_seed(2)
    grads = [(torch.randint(0, 6, (4,), generator=g), torch.randn(4, 2, generator=g))
             for _ in range(6)]
    a = torch.nn.Parameter(torch.randn(6, 2, generator=g))
    b = torch.nn.Parameter(a.detach().clone())
    oa = LazyAdamW([a], **HYPER)
    for idx, vals in grads[:3]:
        a.grad = _sparse(idx, vals, a.shape)
        oa.step()
    b.data.copy_(a.detach())
    ob = LazyAdamW([b], **HYPER)
    ob.load_state_dict(copy.deepcopy(oa.state_dict()))   # as saved and read back
    for idx, vals in grads[3:]:
        for p, o in ((a, oa), (b, ob)):
            p.grad = _sparse(idx, vals, p.shape)
            o.step()
    assert torch.equal(a, b)


def test_refuses_bad_settings_and_gradients():
    p = torch.nn.Parameter(torch.zeros(3, 2))
    with pytest.raises(ValueError, match="betas"):
        LazyAdamW([p], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="lr"):
        LazyAdamW([p], lr=-1.0)
    opt = LazyAdamW([p])
    p.grad = torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.ones(1), (3, 2),
                                     check_invariants=True)
    with pytest.raises(ValueError, match="whole rows"):
        opt.step()
