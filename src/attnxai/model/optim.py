"""Lazy AdamW: torch's AdamW, except that a parameter with a sparse gradient of rows (the word
embedding) has only the rows its gradient holds updated.

The paper's model has 11.6 M parameters, 11.5 M of them in the 89,568 x 128 word embedding
``W_e``, and a batch of 16 reviews uses about a thousand of its rows. Dense AdamW reads and writes
all 11.5 M weights and both their moments at every step (most of a training step's time, measured
by ``benchmarks/bench_train.py``); :class:`LazyAdamW` touches the rows the batch used.

The update. For a parameter with a dense gradient, :class:`LazyAdamW` is ``torch.optim.AdamW``
(the same call of torch's fused kernel, bit for bit). For a parameter whose gradient is a sparse
COO tensor of whole rows (``indices`` (1, U), ``values`` (U, ...)), at its ``s``-th step and for
each row ``r`` the gradient holds (duplicates are summed first)::

    m_r <- b1 m_r + (1 - b1) g_r,      v_r <- b2 v_r + (1 - b2) g_r^2
    W_r <- W_r (1 - lr wd) - lr / (1 - b1^s) * m_r / (sqrt(v_r) / sqrt(1 - b2^s) + eps)

computed by the same AdamW kernel on the gathered rows, while every other row and its moments stay
exactly as they are. ``s`` counts the steps the parameter took (every step, for the embedding: the
``[CLS]`` row is in every batch), so the bias corrections are dense AdamW's. Dense AdamW would
also, at every step, shrink the untouched rows by ``1 - lr wd``, decay their moments and keep
moving them by their momentum ``m_r / sqrt(v_r)``: a rare word's row keeps moving for about
``1 / (1 - b1 / sqrt(b2))``, i.e. 10, steps after each batch that uses it, where the lazy update
moves it once. This is the "lazy Adam" of TensorFlow (``LazyAdam``) and of torch's ``SparseAdam``,
with AdamW's decoupled weight decay applied, like the moments, to the rows updated (as TensorFlow
Addons' decoupled weight decay does for a sparse update). When every row is in every gradient it
is AdamW exactly (``tests/model/test_optim.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import Tensor
from torch.optim.adamw import adamw

__all__ = ["LazyAdamW"]


class LazyAdamW(torch.optim.Optimizer):
    """AdamW with lazy updates of sparse row gradients (see the module docstring).

    ``params``, ``lr``, ``betas``, ``eps``, ``weight_decay`` as ``torch.optim.AdamW``;
    ``fused=False`` runs torch's single-tensor AdamW instead of its fused kernel (same formula)."""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, *, fused: bool = True):
        if not lr >= 0.0 or not eps >= 0.0 or not weight_decay >= 0.0:
            raise ValueError(f"lr, eps and weight_decay must be >= 0, got {lr}, {eps}, "
                             f"{weight_decay}")
        if not all(0.0 <= b < 1.0 for b in betas) or len(betas) != 2:
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, fused=bool(fused)))

    def _state(self, p: Tensor) -> dict[str, Tensor]:
        st = self.state[p]
        if not st:          # as torch's fused AdamW: a float32 step count on the parameter's device
            st["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
            st["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            st["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return st

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            dense: tuple[list[Tensor], ...] = ([], [], [], [], [])
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self._state(p)
                if p.grad.is_sparse:
                    self._rows_step(group, p, st)
                    continue
                for lst, t in zip(dense, (p, p.grad, st["exp_avg"], st["exp_avg_sq"],
                                          st["step"])):
                    lst.append(t)
            if dense[0]:
                self._adamw(group, *dense)
        return loss

    def _rows_step(self, group: dict, p: Tensor, st: dict[str, Tensor]) -> None:
        """The lazy update of the rows ``p.grad`` (sparse COO, indices on dimension 0) holds."""
        grad = p.grad.coalesce()
        if grad.sparse_dim() != 1:
            raise ValueError(f"LazyAdamW updates whole rows: the sparse gradient of a "
                             f"{tuple(p.shape)} parameter must have one sparse dimension, got "
                             f"{grad.sparse_dim()}")
        rows = grad.indices()[0]
        w, m, v = (t.index_select(0, rows) for t in (p, st["exp_avg"], st["exp_avg_sq"]))
        self._adamw(group, [w], [grad.values()], [m], [v], [st["step"]])
        for t, new in ((p, w), (st["exp_avg"], m), (st["exp_avg_sq"], v)):
            t.index_copy_(0, rows, new)

    @staticmethod
    def _adamw(group: dict, params: list[Tensor], grads: list[Tensor], exp_avgs: list[Tensor],
               exp_avg_sqs: list[Tensor], steps: list[Tensor]) -> None:
        b1, b2 = group["betas"]
        adamw(params, grads, exp_avgs, exp_avg_sqs, [], steps, foreach=False,
              fused=group["fused"], amsgrad=False, beta1=b1, beta2=b2, lr=group["lr"],
              weight_decay=group["weight_decay"], eps=group["eps"], maximize=False)
