"""One validator per kind of input, shared by every entry point of the package.

Each function returns the value in canonical form or raises: ``TypeError`` when the *type* is wrong
(a str where a number is expected, a float where an int is), ``ValueError`` when the type is right
but the *value* is not (an empty text, a negative width, a class that does not exist). Messages
name the argument, what was given and what is expected, so that a reader who passes a wrong value
gets an error, never a silently wrong explanation.

Token ids are validated by the model that reads them
(:meth:`attnxai.model.interface.ClassifierBase.check_ids`), since only it knows its vocabulary, length and
special tokens; everything else is here.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = ["bow", "choice", "explained_class", "integer", "kernel_width", "names", "nonnegative",
           "num_samples", "positive_int", "random_state", "real_scores", "seed", "target", "text"]

_WORD = re.compile(r"\w")


def integer(value: Any, name: str) -> int:
    """``value`` as a Python int: ints and numpy integers pass; bools, floats and str do not."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    return int(value)


def positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    """An int ``>= minimum`` (batch sizes, chunk sizes, numbers of reviews...)."""
    v = integer(value, name)
    if v < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {v}")
    return v


def choice(value: Any, name: str, options: tuple[str, ...]) -> str:
    """One of the strings ``options``."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {options}, got {type(value).__name__} ({value!r})")
    if value not in options:
        raise ValueError(f"{name} must be one of {options}, got {value!r}")
    return value


def text(value: Any, name: str = "text") -> str:
    """A document to explain: a non-empty str with at least one word character (lime splits on
    ``\\W+``; a text without a word character has no feature and the model sees only [CLS])."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} is empty: there is nothing to explain")
    if not _WORD.search(value):
        raise ValueError(f"{name} has no letter or digit, so no word to explain: {value[:40]!r}")
    return value


def target(value: Any, n_classes: int) -> int:
    """The index of the explained logit: an int in ``[0, n_classes)`` (numpy ints accepted)."""
    t = integer(value, "target")
    if not 0 <= t < n_classes:
        raise ValueError(f"target class {t} does not exist: the model has {n_classes} logits "
                         f"(classes 0..{n_classes - 1})")
    return t


def explained_class(value: Any, n_classes: int | None = None, *, text: bool = False
                    ) -> int | str:
    """What every entry point takes as ``target``: a class index (:func:`target`; not checked
    against the classes when ``n_classes`` is None, before the model is known) or
    ``"predicted"`` (each text's predicted class, resolved once its logits are known).

    ``text``: the value is a command line's (or a study's options') spelling: any case, and a
    str of digits is a class index; a str that is neither is then a ``ValueError`` (elsewhere a
    ``TypeError``: a str where a class index is expected)."""
    if isinstance(value, str):
        spec = value.strip().lower() if text else value
        if spec == "predicted":
            return spec
        if not (text and spec.isascii() and spec.isdigit()):   # "²".isdigit(), int() refuses it
            raise (ValueError if text else TypeError)(
                f"target must be a class index or 'predicted', got {value!r}")
        value = int(spec)
    return integer(value, "target") if n_classes is None else target(value, n_classes)


def names(value: Any, options: Sequence[str], *, kind: str, default: Sequence[str] | None = None,
          text: bool = False, allow_empty: bool = False) -> list[str]:
    """A list of names among ``options`` (methods, perturbations, selections...), in the order
    given, repeats dropped: the one reading of such a list.

    ``None``: ``default`` (refused if there is none). A str is a command line's spelling only
    where ``text`` is true (comma-separated, any case, ``"all"`` for every option); elsewhere it is
    refused, since a str is an iterable of its letters. ``kind`` names one element in the messages
    (``"method"``)."""
    if value is None:
        if default is None:
            raise ValueError(f"no {kind} given; choose among {list(options)}")
        return list(default)
    if isinstance(value, str) and text:
        if value.strip().lower() == "all":
            return list(options)
        by_lower = {o.lower(): o for o in options}
        given = [v.strip() for v in value.split(",") if v.strip()]
        value = [by_lower.get(v.lower(), v) for v in given]
    elif isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"{kind}s must be a list of {kind} names, got {type(value).__name__} "
                        f"({value!r}): wrap one name, [{value!r}] (names: {list(options)})")
    out = list(dict.fromkeys(value))
    bad = [v for v in out if v not in options]
    if bad:
        raise ValueError(f"unknown {kind}(s) {bad}; choose among {list(options)}"
                         + (" (comma-separated) or 'all'" if text else ""))
    if not out and not allow_empty:
        raise ValueError(f"no {kind} chosen; choose among {list(options)}")
    return out


def kernel_width(value: Any, *, allow_inf: bool = False) -> float:
    """lime's kernel width: a finite positive real (``math.inf``, the wide-kernel limit, only where
    ``allow_inf``). Strings and bools are refused rather than converted."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"kernel_width must be a positive number, got {type(value).__name__} "
                        f"({value!r})")
    nu = float(value)
    if math.isnan(nu) or nu <= 0:
        raise ValueError(f"kernel_width must be > 0, got {value!r}")
    if math.isinf(nu) and not allow_inf:
        raise ValueError("kernel_width must be finite here (math.inf, the wide-kernel limit, is "
                         "only meaningful for the closed forms in attnxai.theory)")
    return nu


def nonnegative(value: Any, name: str) -> float:
    """A finite real ``>= 0`` (a noise level, a tolerance of zero allowed); str and bool refused."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number >= 0, got {type(value).__name__} ({value!r})")
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def num_samples(value: Any) -> int:
    """lime's number of samples: an int >= 2 (sample 0 is the document itself)."""
    n = integer(value, "num_samples")
    if n < 2:
        raise ValueError(f"num_samples must be >= 2 (sample 0 is the document itself), got {n}")
    return n


def seed(value: Any, name: str = "seed") -> int:
    """A seed of numpy's and torch's generators: an int in ``[0, 2**32)`` (numpy refuses negative
    seeds, and a negative one would fail only once a training had started)."""
    v = integer(value, name)
    if not 0 <= v < 2**32:
        raise ValueError(f"{name} must be an int in [0, 2**32), got {v}")
    return v


def real_scores(value: Any, name: str = "scores") -> np.ndarray:
    """Scores as a float64 array: complex numbers (which numpy would silently cut to their real
    part), strings, booleans and objects are refused."""
    arr = np.asarray(value)
    if np.iscomplexobj(arr):
        raise TypeError(f"{name} must be real numbers, got complex values ({arr.dtype}): an "
                        "attribution is one real score per token")
    if arr.dtype == bool or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


def bow(value: Any) -> bool:
    """lime's ``bow``: True (delete every occurrence of a word) or False (replace positions).
    Only real booleans: the string ``"false"`` is truthy in Python and would silently mean True."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"bow must be True (delete words) or False (replace positions by the "
                        f"mask string), got {type(value).__name__} ({value!r})")
    return bool(value)


def random_state(value: Any) -> np.random.RandomState:
    """What lime accepts (sklearn's ``check_random_state``): None (numpy's global state), an int
    in ``[0, 2**32)`` or a ``numpy.random.RandomState`` (used and advanced in place)."""
    if value is None or value is np.random:
        return np.random.mtrand._rand
    if isinstance(value, np.random.RandomState):
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError("random_state must be None, an int or a numpy.random.RandomState (what "
                        f"lime accepts), got {type(value).__name__}")
    if not 0 <= int(value) < 2**32:
        raise ValueError(f"random_state must be an int in [0, 2**32), got {value}")
    return np.random.RandomState(int(value))
