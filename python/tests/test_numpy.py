"""eqfuse.numpy under eqfuse.jit against NumPy (and jax.numpy where JAX is importable):
a table of functions x shapes x broadcasts x dtypes. Values, shapes and dtypes must be
NumPy's (NumPy 2 promotion; Python scalars weak); where NumPy raises, eqfuse raises."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from _numpy_check import check, data

F32, F64, I8, I32, I64, U8, B = np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8, np.bool_

BINARY = [
    "add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "power", "maximum",
    "minimum", "arctan2", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or",
]  # fmt: skip
BROADCASTS = [((6,), (6,)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)), ((5,), ())]
DTYPE_PAIRS = [(F32, F32), (F64, F32), (I32, I32), (I64, I32), (I32, F32), (B, B), (U8, I8)]


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def _pos(name: str, k: int) -> bool:
    return name == "power" and k == 1  # integers to negative powers: NumPy raises per value


@pytest.mark.parametrize("dts", DTYPE_PAIRS, ids=lambda d: f"{np.dtype(d[0])}-{np.dtype(d[1])}")
@pytest.mark.parametrize("shapes", BROADCASTS, ids=str)
@pytest.mark.parametrize("name", BINARY)
def test_binary(name, shapes, dts):
    args = [data(s, d, _seed(name, shapes, dts, k), positive=_pos(name, k)) for k, (s, d) in enumerate(zip(shapes, dts))]
    args = [np.asarray(a, dtype=d)[()] if np.ndim(a) == 0 else a for a, d in zip(args, dts)]
    if name == "power" and np.dtype(dts[1]).kind in "iu":
        args[1] = np.clip(args[1], 0, 4).astype(dts[1])
    check(lambda xp, a, b: getattr(xp, name)(a, b), *args)


SCALARS = [-3, 2.5, True, 300]


@pytest.mark.parametrize("scalar", SCALARS, ids=repr)
@pytest.mark.parametrize("dt", [F32, I32, U8, B], ids=lambda d: str(np.dtype(d)))
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**", "<", "==", "max"])
def test_python_scalars_are_weak(op, dt, scalar):
    x = data((2, 3), dt, _seed(op, dt, scalar), positive=op == "**")
    if op == "**" and isinstance(scalar, int) and scalar < 0 and np.dtype(dt).kind in "iub":
        scalar = 3
    fns = {
        "+": lambda xp, a: (a + scalar, scalar + a),
        "-": lambda xp, a: (a - scalar, scalar - a),
        "*": lambda xp, a: (a * scalar, scalar * a),
        "/": lambda xp, a: (a / scalar, scalar / (a + 10)),
        "//": lambda xp, a: (a // scalar, scalar // a),
        "%": lambda xp, a: (a % scalar, scalar % a),
        "**": lambda xp, a: a**scalar,
        "<": lambda xp, a: (a < scalar, scalar < a),
        "==": lambda xp, a: a == scalar,
        "max": lambda xp, a: xp.maximum(a, scalar),
    }
    check(fns[op], x)


UNARY = [
    "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "log2", "log10", "exp2", "expm1", "log1p",
    "arctan", "floor", "ceil", "trunc", "rint", "round", "square", "reciprocal", "sign", "isnan",
    "isinf", "isfinite", "absolute", "abs", "negative", "invert", "logical_not",
]  # fmt: skip


@pytest.mark.parametrize("dt", [F32, F64, I32, I64, U8, B], ids=lambda d: str(np.dtype(d)))
@pytest.mark.parametrize("shape", [(7,), (2, 3)], ids=str)
@pytest.mark.parametrize("name", UNARY)
def test_unary(name, shape, dt):
    positive = name in ("log", "sqrt", "log2", "log10", "log1p", "reciprocal") and np.dtype(dt).kind != "b"
    x = data(shape, dt, _seed(name, shape, dt), positive=positive)
    if name == "reciprocal" and np.dtype(dt).kind in "iu":
        x = np.where(x == 0, 1, x).astype(dt)  # NumPy's integer 1 / 0 is undefined
    if name in ("rint", "round") and np.dtype(dt).kind == "f":
        x = (np.round(x * 4) / 4).astype(dt)  # halves: NumPy rounds them to even
    check(lambda xp, a: getattr(xp, name)(a), x)


REDUCTIONS = ["sum", "mean", "max", "min", "prod", "any", "all", "var", "std", "argmin", "argmax"]
AXES = {2: [None, 0, 1, -1, None, 0], 3: [None, 0, 1, 2, (0, 2), (1, 2), -1, (0, 1, 2)]}


@pytest.mark.parametrize("dt", [F32, F64, I32, B], ids=lambda d: str(np.dtype(d)))
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)], ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions(name, shape, dt):
    """Every axis form, keepdims alternating (rank 1 is in the other tables)."""
    x = data(shape, dt, _seed(name, shape, dt))
    if name == "prod" and np.dtype(dt).kind == "f":
        x = (x / 2 + 1).astype(dt)
    axes = [a for a in AXES[len(shape)] if not (name.startswith("arg") and isinstance(a, tuple))]
    check(lambda xp, a: tuple(getattr(xp, name)(a, axis=ax, keepdims=k % 2 == 1) for k, ax in enumerate(axes)), x)


@pytest.mark.parametrize("name", REDUCTIONS)
def test_reductions_rank1(name):
    x = data((7,), np.float32, _seed(name))
    check(lambda xp, a: (getattr(xp, name)(a), getattr(xp, name)(a, axis=0, keepdims=True), getattr(xp, name)((xp.abs(a) * 3 + 4).astype(np.uint8))), x)


@pytest.mark.parametrize("dt", [F32, F64, I32, U8, B], ids=lambda d: str(np.dtype(d)))
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4)], ids=str)
def test_cumsum_and_methods(shape, dt):
    x = data(shape, dt, _seed("cumsum", shape, dt))
    axes = [None] + list(range(len(shape)))
    check(lambda xp, a: tuple(xp.cumsum(a, axis=ax) for ax in axes) + (a.sum(), a.max(axis=0), a.argmax(axis=-1)), x)


def test_ddof_and_dtype_arguments():
    x = data((4, 5), F32, 1)
    check(lambda xp, a: (xp.var(a, ddof=1), xp.std(a, axis=0, ddof=1), xp.sum(a, dtype=np.float64), xp.mean(a, axis=1, dtype=np.float64)), x)


# shapes, indexing, contractions: one function per row, each over several dtypes ------------
SHAPE_FUNCTIONS = {
    "slice": lambda xp, a: (a[1:], a[:-1], a[1:-1], a[::2], a[::-1], a[-3:], a[2], a[-1]),
    "slice2d": lambda xp, a: (a[1:, :2], a[:, ::-1], a[0], a[:, -1], a[..., 1], a[None, :, 1:], a[:, None]),
    "reshape": lambda xp, a: (a.reshape(-1), xp.reshape(a, (a.shape[0], -1)), a.reshape(a.size), a.ravel()),
    "transpose": lambda xp, a: (a.T, xp.transpose(a), xp.swapaxes(a, 0, 1), xp.moveaxis(a[None], 0, -1), a.transpose(1, 0)),
    "expand_squeeze": lambda xp, a: (xp.expand_dims(a, 0), xp.squeeze(xp.expand_dims(a, -1), -1), a[:, None].squeeze()),
    "concatenate": lambda xp, a: (xp.concatenate([a, a], axis=0), xp.concatenate([a, a[:, :1]], axis=1), xp.stack([a, a]), xp.concatenate([a.ravel(), a.ravel()])),
    "pad": lambda xp, a: (xp.pad(a, 1), xp.pad(a, ((1, 2), (0, 1)), mode="edge"), xp.pad(a, 2, constant_values=3), xp.pad(a, 1, mode="wrap")),
    "roll": lambda xp, a: (xp.roll(a, 1, axis=0), xp.roll(a, -2, axis=1), xp.roll(a, 3)),
    "flip": lambda xp, a: (xp.flip(a, 0), xp.flip(a, 1), xp.flip(a)),
    "gather": lambda xp, a: (a[xp.array([0, 2, -1])], a[:, xp.array([[1, 0], [2, 2]])], xp.take(a, xp.array([3, 0]))),
    "traced_gather": lambda xp, a: a.ravel()[xp.argmax(a, axis=1)],
    "mask": lambda xp, a: (a[a > 0], a.ravel()[a.ravel() != 1]),
    "where_clip": lambda xp, a: (xp.where(a > 0, a, 0), xp.where(a > 1, 1.5, a), xp.clip(a, 0, 2), xp.clip(a, -1, None)),
    "like": lambda xp, a: (xp.zeros_like(a), xp.ones_like(a), xp.full_like(a, 7), xp.zeros(a.shape), xp.ones((a.shape[0], 2), dtype=np.int32)),
    "arange": lambda xp, a: (xp.arange(a.shape[0]), xp.arange(1, a.shape[1]) * a[0, 1:], xp.arange(5), xp.arange(a.shape[1]) + a),
    "astype": lambda xp, a: (a.astype(np.float32), a.astype(np.int64), a.astype(np.bool_), a.astype(np.uint8), xp.astype(a, np.float64)),
    "sizes": lambda xp, a: (a / a.shape[0], a.sum() / a.size, a * (a.shape[1] - 1), xp.mean(a) * a.shape[0]),
}


@pytest.mark.parametrize("dt", [F32, F64, I32, B], ids=lambda d: str(np.dtype(d)))
@pytest.mark.parametrize("name", sorted(SHAPE_FUNCTIONS))
def test_shape_functions(name, dt):
    x = data((4, 5), dt, _seed(name, dt))
    if np.dtype(dt).kind == "u" or name == "astype":
        x = np.abs(x).astype(dt)
    check(SHAPE_FUNCTIONS[name], x)


CONTRACTIONS = {
    "dot11": ((5,), (5,), lambda xp, a, b: (xp.dot(a, b), a @ b, xp.vdot(a, b))),
    "matmul22": ((3, 4), (4, 2), lambda xp, a, b: (a @ b, xp.dot(a, b), xp.matmul(a, b))),
    "matvec": ((3, 4), (4,), lambda xp, a, b: (a @ b, xp.dot(a, b))),
    "vecmat": ((4,), (4, 3), lambda xp, a, b: a @ b),
    "batched": ((2, 3, 4), (2, 4, 5), lambda xp, a, b: a @ b),
    "einsum": ((3, 4), (4, 5), lambda xp, a, b: (xp.einsum("ij,jk->ik", a, b), xp.einsum("ij,jk->ki", a, b), xp.einsum("ij,jk", a, b), xp.einsum("ij,jk->", a, b), xp.einsum("ij->j", a), xp.einsum("ij->ji", a))),
    "einsum_rows": ((3, 4), (3, 4), lambda xp, a, b: (xp.einsum("ij,ij->i", a, b), xp.einsum("ij,kj->ik", a, b), xp.outer(a[0], b[1]))),
}


@pytest.mark.parametrize("dts", [(F32, F32), (F64, F64), (I32, I64), (F32, F64)], ids=lambda d: f"{np.dtype(d[0])}-{np.dtype(d[1])}")
@pytest.mark.parametrize("name", sorted(CONTRACTIONS))
def test_contractions(name, dts):
    sa, sb, fn = CONTRACTIONS[name]
    check(fn, data(sa, dts[0], _seed(name, 0)), data(sb, dts[1], _seed(name, 1)))


def test_generic_function_runs_under_numpy_and_eqfuse():
    def zscore(xp, x, w):
        mu = xp.mean(x, axis=0, keepdims=True)
        sd = xp.std(x, axis=0, keepdims=True)
        return (x - mu) / (sd + 1e-6) @ w

    x, w = data((6, 3), F64, 5), data((3, 2), F64, 6)
    check(zscore, x, w)
