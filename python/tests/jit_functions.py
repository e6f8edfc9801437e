"""A table of typical NumPy user functions, each written once against a module ``xp``
(NumPy, ``eqfuse.numpy`` or ``jax.numpy``) and run unchanged under each: by
``test_jit.py`` (under ``eqfuse.jit``, against NumPy) and by ``python/bench/jit_bench.py``
(timed against ``jax.jit`` and NumPy).

Each entry: ``(name, function(xp, *arrays), make(rng, n) -> arrays)``; ``n`` scales the
data (tests use a small one, the benchmark a large one)."""

from __future__ import annotations

import numpy as np


def loops(xp):
    """``(fori_loop, while_loop)`` for the module ``xp``: Python loops for NumPy,
    ``eqfuse``'s for ``eqfuse.numpy``, ``jax.lax``'s for ``jax.numpy``."""
    name = getattr(xp, "__name__", "")
    if name == "eqfuse.numpy":
        import eqfuse

        return eqfuse.fori_loop, eqfuse.while_loop
    if name.startswith("jax"):
        import jax

        return jax.lax.fori_loop, jax.lax.while_loop

    def fori(lo, hi, body, init):
        s = init
        for i in range(lo, hi):
            s = body(i, s)
        return s

    def whl(cond, body, init):
        s = init
        while cond(s):
            s = body(s)
        return s

    return fori, whl


# --- normalisations -----------------------------------------------------------------------
def softmax(xp, x):
    e = xp.exp(x - xp.max(x, axis=-1, keepdims=True))
    return e / xp.sum(e, axis=-1, keepdims=True)


def log_softmax(xp, x):
    m = xp.max(x, axis=-1, keepdims=True)
    return x - m - xp.log(xp.sum(xp.exp(x - m), axis=-1, keepdims=True))


def logsumexp(xp, x):
    m = xp.max(x, axis=1)
    return m + xp.log(xp.sum(xp.exp(x - m[:, None]), axis=1))


def layer_norm(xp, x, gamma, beta):
    mu = xp.mean(x, axis=-1, keepdims=True)
    var = xp.var(x, axis=-1, keepdims=True)
    return (x - mu) / xp.sqrt(var + 1e-5) * gamma + beta


def rms_norm(xp, x, w):
    return x / xp.sqrt(xp.mean(x * x, axis=-1, keepdims=True) + 1e-6) * w


def zscore(xp, x):
    return (x - x.mean(axis=0)) / x.std(axis=0)


def minmax_scale(xp, x):
    lo, hi = x.min(axis=0), x.max(axis=0)
    return (x - lo) / (hi - lo)


def l2_normalize_rows(xp, x):
    return x / xp.linalg.norm(x, axis=1, keepdims=True)


def cdf(xp, x):
    c = xp.cumsum(x)
    return c / c[-1]


# --- similarity, distances, contractions -----------------------------------------------------
def cosine_similarity(xp, a, b):
    return xp.sum(a * b, axis=1) / (xp.sqrt(xp.sum(a * a, axis=1)) * xp.sqrt(xp.sum(b * b, axis=1)))


def cosine_matrix(xp, a, b):
    an = a / xp.sqrt(xp.sum(a * a, axis=1, keepdims=True))
    bn = b / xp.sqrt(xp.sum(b * b, axis=1, keepdims=True))
    return an @ bn.T


def pairwise_distances(xp, a, b):
    d = a[:, None, :] - b[None, :, :]
    return xp.sqrt(xp.sum(d * d, axis=-1))


def saxpy(xp, x, y):
    return 2.5 * x + y


def dot(xp, x, y):
    return xp.dot(x, y)


def matvec(xp, a, x):
    return a @ x


def matmul(xp, a, b):
    return a @ b


def einsum_bilinear(xp, a, w, b):
    return xp.einsum("ij,ij->i", a @ w, b)


def outer_scaled(xp, x, y):
    return xp.outer(x, y) / (1.0 + xp.abs(x).sum())


def covariance(xp, x):
    xc = x - x.mean(axis=0)
    return xc.T @ xc / (x.shape[0] - 1)


def attention(xp, q, k, v):
    s = q @ k.T / np.sqrt(q.shape[1])
    w = xp.exp(s - xp.max(s, axis=1, keepdims=True))
    w = w / xp.sum(w, axis=1, keepdims=True)
    return w @ v


# --- elementwise models and losses ------------------------------------------------------------
def relu(xp, x):
    return xp.maximum(x, 0.0)


def gelu(xp, x):
    return 0.5 * x * (1.0 + xp.tanh(0.7978845608 * (x + 0.044715 * x**3)))


def sigmoid(xp, x):
    return 1.0 / (1.0 + xp.exp(-x))


def huber(xp, pred, target):
    r = xp.abs(pred - target)
    return xp.mean(xp.where(r < 1.0, 0.5 * r * r, r - 0.5))


def mse(xp, pred, target):
    return xp.mean((pred - target) ** 2)


def cross_entropy(xp, logits, labels):
    lp = log_softmax(xp, logits)
    onehot = xp.arange(logits.shape[1])[None, :] == labels[:, None]
    return -xp.mean(xp.sum(xp.where(onehot, lp, 0.0), axis=1))


def one_hot(xp, labels, logits):
    return (labels[:, None] == xp.arange(logits.shape[1])[None, :]).astype(np.float32)


def clip_by_norm(xp, g):
    n = xp.sqrt(xp.sum(g * g))
    return g * xp.minimum(1.0, 1.0 / (n + 1e-12))


def option_price(xp, s, k, t):
    sig, r = 0.2, 0.03
    d1 = (xp.log(s / k) + (r + 0.5 * sig * sig) * t) / (sig * xp.sqrt(t))
    d2 = d1 - sig * xp.sqrt(t)
    cdf1 = 0.5 * (1.0 + xp.tanh(0.7978845608 * (d1 + 0.044715 * d1**3)))
    cdf2 = 0.5 * (1.0 + xp.tanh(0.7978845608 * (d2 + 0.044715 * d2**3)))
    return s * cdf1 - k * xp.exp(-r * t) * cdf2


def polynomial(xp, x):
    return ((((0.5 * x - 1.0) * x + 2.0) * x - 0.25) * x + 3.0)


# --- stencils, scans, windows ---------------------------------------------------------------------
def stencil_pad(xp, x):
    p = xp.pad(x, 1, mode="edge")
    return 0.25 * p[:-2] + 0.5 * p[1:-1] + 0.25 * p[2:]


def stencil_roll(xp, x):
    return x - 0.5 * (xp.roll(x, 1) + xp.roll(x, -1))


def laplacian_2d(xp, u):
    return u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4.0 * u[1:-1, 1:-1]


def jacobi_2d(xp, u):
    p = xp.pad(u, 1, mode="constant")
    return 0.25 * (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:])


def moving_average(xp, x):
    c = xp.cumsum(xp.concatenate([xp.zeros(1, dtype=x.dtype), x]))
    return (c[4:] - c[:-4]) / 4.0


def cumsum_rows(xp, x):
    return xp.cumsum(x, axis=1)


def reverse_cumsum(xp, x):
    return xp.flip(xp.cumsum(xp.flip(x)))


def diff(xp, x):
    return x[1:] - x[:-1]


# --- selection, counting, clustering --------------------------------------------------------------------
def kmeans_assign(xp, x, c):
    d = xp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    return xp.argmin(d, axis=1)


def kmeans_step(xp, x, c):
    d = xp.sum((x[:, None, :] - c[None, :, :]) ** 2, axis=-1)
    a = xp.argmin(d, axis=1)
    onehot = (a[:, None] == xp.arange(c.shape[0])[None, :]).astype(x.dtype)
    counts = xp.sum(onehot, axis=0)
    return (onehot.T @ x) / xp.maximum(counts, 1.0)[:, None]


def histogram(xp, x, edges):
    inside = (x[:, None] >= edges[None, :-1]) & (x[:, None] < edges[None, 1:])
    return xp.sum(inside, axis=0)


def masked_mean(xp, x):
    return xp.mean(x[x > 0])


def count_above(xp, x):
    return xp.sum(x > 0.5), xp.count_nonzero(x < -0.5)


def row_argmax_values(xp, x):
    i = xp.argmax(x, axis=1)
    return i, xp.max(x, axis=1)


def top_row(xp, x):
    return x[xp.argmax(xp.sum(x, axis=1))]


# --- loops --------------------------------------------------------------------------------------------------
def power_iteration(xp, a):
    fori, _ = loops(xp)

    def body(i, v):
        w = a @ v
        return w / xp.sqrt(xp.sum(w * w))

    v = fori(0, 20, body, xp.ones(a.shape[0], dtype=a.dtype) / np.sqrt(a.shape[0]))
    return v @ (a @ v)


def newton_sqrt(xp, x):
    _, whl = loops(xp)

    def cond(s):
        y, d, k = s
        return (d > 1e-10) & (k < 100)

    def body(s):
        y, d, k = s
        y2 = 0.5 * (y + x / y)
        return y2, xp.max(xp.abs(y2 - y)), k + 1

    y, d, k = whl(cond, body, (x + 1.0, xp.asarray(1.0), xp.asarray(0)))
    return y, k


def heat_steps(xp, u):
    fori, _ = loops(xp)
    return fori(0, 10, lambda i, v: v + 0.1 * (xp.roll(v, 1) + xp.roll(v, -1) - 2.0 * v), u)


def logistic_regression(xp, x, y):
    fori, _ = loops(xp)

    def step(i, w):
        p = 1.0 / (1.0 + xp.exp(-(x @ w)))
        return w - 0.1 * (x.T @ (p - y)) / x.shape[0]

    return fori(0, 25, step, xp.zeros(x.shape[1], dtype=x.dtype))


def ema(xp, x):
    fori, _ = loops(xp)
    return fori(1, 8, lambda i, s: 0.9 * s + 0.1 * x[i], x[0])


def fixed_point(xp, x):
    _, whl = loops(xp)

    def body(s):
        z, k = s
        return 0.5 * z + 0.25 * xp.sin(z) + x, k + 1

    z, k = whl(lambda s: s[1] < 30, body, (xp.zeros_like(x), 0))
    return z


# --- the table ----------------------------------------------------------------------------------------
def _f(rng, *shape, dtype=np.float64, lo=-1.0, hi=1.0):
    return np.asarray(rng.uniform(lo, hi, shape), dtype=dtype)


F32 = np.float32


def _sq(n: int) -> int:
    """The side of the square inputs (n x n work): at most 1500, so that a large ``n``
    stays a few million elements."""
    return min(n, 1500)

FUNCTIONS = [
    ("softmax", softmax, lambda r, n: (_f(r, n, 16, dtype=F32),)),
    ("log_softmax", log_softmax, lambda r, n: (_f(r, n, 16),)),
    ("logsumexp", logsumexp, lambda r, n: (_f(r, n, 16),)),
    ("layer_norm", layer_norm, lambda r, n: (_f(r, n, 32, dtype=F32), _f(r, 32, dtype=F32), _f(r, 32, dtype=F32))),
    ("rms_norm", rms_norm, lambda r, n: (_f(r, n, 32), _f(r, 32))),
    ("zscore", zscore, lambda r, n: (_f(r, n, 8),)),
    ("minmax_scale", minmax_scale, lambda r, n: (_f(r, n, 8, dtype=F32),)),
    ("l2_normalize_rows", l2_normalize_rows, lambda r, n: (_f(r, n, 8),)),
    ("cdf", cdf, lambda r, n: (_f(r, n * 8, lo=0.0),)),
    ("cosine_similarity", cosine_similarity, lambda r, n: (_f(r, n, 16), _f(r, n, 16))),
    ("cosine_matrix", cosine_matrix, lambda r, n: (_f(r, n, 16), _f(r, 24, 16))),
    ("pairwise_distances", pairwise_distances, lambda r, n: (_f(r, n, 3), _f(r, 20, 3))),
    ("saxpy", saxpy, lambda r, n: (_f(r, n * 16, dtype=F32), _f(r, n * 16, dtype=F32))),
    ("dot", dot, lambda r, n: (_f(r, n * 16), _f(r, n * 16))),
    ("matvec", matvec, lambda r, n: (_f(r, n, 32), _f(r, 32))),
    ("matmul", matmul, lambda r, n: (_f(r, n, 32), _f(r, 32, 24))),
    ("einsum_bilinear", einsum_bilinear, lambda r, n: (_f(r, n, 8), _f(r, 8, 8), _f(r, n, 8))),
    ("outer_scaled", outer_scaled, lambda r, n: (_f(r, n), _f(r, 12))),
    ("covariance", covariance, lambda r, n: (_f(r, n, 6),)),
    ("attention", attention, lambda r, n: (_f(r, _sq(n), 16), _f(r, _sq(n), 16), _f(r, _sq(n), 16))),
    ("relu", relu, lambda r, n: (_f(r, n * 16),)),
    ("gelu", gelu, lambda r, n: (_f(r, n * 16, dtype=F32),)),
    ("sigmoid", sigmoid, lambda r, n: (_f(r, n * 16),)),
    ("huber", huber, lambda r, n: (_f(r, n * 8, lo=-3, hi=3), _f(r, n * 8))),
    ("mse", mse, lambda r, n: (_f(r, n * 8), _f(r, n * 8))),
    ("cross_entropy", cross_entropy, lambda r, n: (_f(r, n, 10), r.integers(0, 10, n))),
    ("one_hot", one_hot, lambda r, n: (r.integers(0, 10, n), _f(r, n, 10))),
    ("clip_by_norm", clip_by_norm, lambda r, n: (_f(r, n * 8, lo=-5, hi=5),)),
    ("option_price", option_price, lambda r, n: (_f(r, n * 8, lo=50, hi=150), _f(r, n * 8, lo=80, hi=120), _f(r, n * 8, lo=0.1, hi=2.0))),
    ("polynomial", polynomial, lambda r, n: (_f(r, n * 16, dtype=F32),)),
    ("stencil_pad", stencil_pad, lambda r, n: (_f(r, n * 16),)),
    ("stencil_roll", stencil_roll, lambda r, n: (_f(r, n * 16, dtype=F32),)),
    ("laplacian_2d", laplacian_2d, lambda r, n: (_f(r, _sq(n), _sq(n) + 3),)),
    ("jacobi_2d", jacobi_2d, lambda r, n: (_f(r, _sq(n), _sq(n) + 1, dtype=F32),)),
    ("moving_average", moving_average, lambda r, n: (_f(r, n * 8),)),
    ("cumsum_rows", cumsum_rows, lambda r, n: (_f(r, n, 12),)),
    ("reverse_cumsum", reverse_cumsum, lambda r, n: (_f(r, n * 8),)),
    ("diff", diff, lambda r, n: (_f(r, n * 8, dtype=F32),)),
    ("kmeans_assign", kmeans_assign, lambda r, n: (_f(r, n, 4), _f(r, 5, 4))),
    ("kmeans_step", kmeans_step, lambda r, n: (_f(r, n, 4), _f(r, 5, 4))),
    ("histogram", histogram, lambda r, n: (_f(r, n * 8), np.linspace(-1.0, 1.0, 11))),
    ("masked_mean", masked_mean, lambda r, n: (_f(r, n * 8),)),
    ("count_above", count_above, lambda r, n: (_f(r, n * 8),)),
    ("row_argmax_values", row_argmax_values, lambda r, n: (_f(r, n, 9, dtype=F32),)),
    ("top_row", top_row, lambda r, n: (_f(r, n, 6),)),
    ("power_iteration", power_iteration, lambda r, n: ((lambda m: m @ m.T)(_f(r, _sq(n), _sq(n))),)),
    ("newton_sqrt", newton_sqrt, lambda r, n: (_f(r, n * 8, lo=0.5, hi=9.0),)),
    ("heat_steps", heat_steps, lambda r, n: (_f(r, n * 8),)),
    ("logistic_regression", logistic_regression, lambda r, n: (_f(r, n, 5), (r.random(n) < 0.5).astype(np.float64))),
    ("ema", ema, lambda r, n: (_f(r, 8, n),)),
    ("fixed_point", fixed_point, lambda r, n: (_f(r, n * 8),)),
]
