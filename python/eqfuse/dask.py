"""Running a compiled eqfuse program over chunked Dask arrays.

>>> import dask.array as da, numpy as np, eqfuse, eqfuse.dask
>>> prog = eqfuse.compile('''
... input xs : f64[n]
... let mean = reduce (+) 0 xs / f64 n
... output var = reduce (+) 0 (map (\\\\x -> (x - mean) * (x - mean)) xs) / f64 n
... ''')
>>> xs = da.from_array(np.arange(10.0), chunks=3)
>>> out = eqfuse.dask.run(prog, xs=xs)
>>> float(out["var"].compute())
8.25

The inputs whose first dimension is the chunked size name arrive in blocks of rows. The
program is split (in Rust, ``eqfuse::chunks``) into ordinary eqfuse programs: *passes* that
run once per block and compute the partials of the reductions over the rows (combined across
blocks with the program's own operator) and the block totals of its scans (turned into each
block's carry); a *globals* program for the outputs that are not along the rows; a *rows*
program, run per block, for those that are. A program takes as many passes as its reductions
are deep (a variance: two). The tasks are Dask's: any scheduler runs them, the
``distributed`` one with worker processes included (each process compiles a program once).

A reduction along the rows of a rank-2 array's columns (column sums ``reduce (+) 0
(transpose m)``, Aᵀx ``reduce (+) 0 (generate [c, n] (\\j i -> m[i, j] * x[i]))``) is a
partial too: each block gives a row of partials, combined element by element.

*Blocks with halos* (``eqfuse::chunks::halo_plan``): a program whose outputs are arrays over
the chunked size names reading the inputs only at their own index moved by constants (a
stencil ``a[clamp (i - 1) 0 (h - 1), j]``, a wrap ``a[(i + 1) % n]``, elementwise maps) runs
over inputs chunked along any of their dimensions, both axes of a matrix included (a grid
of blocks). Each block gets ``halo`` elements of its neighbours on each side (the largest
offset, added up through ``let``s), runs the whole program unchanged and keeps its own
part: the same bits as the whole run. At the array's ends clamped reads get no halo
(Dask's ``boundary="none"``: the block's end is the array's) and wrapped reads get the other
end (``"periodic"``).

Which runs how: inputs chunked along their first dimension only take the row split, and
blocks with halos where it refuses; inputs chunked along other dimensions too take blocks
with halos, keeping their chunks, and the row split over whole rows where that refuses.

A value that needs rows of other blocks another way (a gather or permute by data, a read
at a mirrored index, a filter) is refused with :class:`ChunkError` naming it and why each
way refuses, unless the chunked inputs are one chunk: then the whole program runs as one
task.
"""

from __future__ import annotations

import json
import operator
from typing import Any

import numpy as np

from . import Program, _check_cast, _convert, _eqfuse, _int_to_float, _recompile
from ._errors import InputError, ShapeError, from_code, input_error

try:
    import dask
    import dask.array as da
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("eqfuse.dask needs Dask: python -m pip install 'dask[array]' distributed") from e

__all__ = ["run", "ChunkError"]


class ChunkError(InputError):
    """``E-INPUT``: the program needs rows of other blocks, and its inputs are in several."""


def _run_block(prog: Program, inputs: dict[str, Any]) -> dict[str, Any]:
    return prog(**inputs)


def _combine(prog: Program, parts: list[Any]) -> Any:
    return prog(parts=np.asarray(parts))["value"]


def _carries(prog: Program, parts: list[Any]) -> list[Any]:
    return list(prog(parts=np.asarray(parts))["carries"])


def _shape(shape: tuple[Any, ...], sizes: dict[str, int]) -> tuple[float, ...]:
    """A declared shape with its size names resolved (``nan`` where only the run knows)."""
    return tuple(
        d if isinstance(d, int) else sizes.get(d, np.nan) if isinstance(d, str) else np.nan for d in shape
    )


def _sizes(prog: Program, given: dict[str, Any]) -> dict[str, int]:
    """The size names bound by the inputs' shapes; two inputs that disagree are an error,
    as in a run."""
    sizes: dict[str, int] = {}
    bound_by: dict[str, str] = {}
    for name, arg in prog.inputs.items():
        value = given[name]
        shape = tuple(np.shape(value)) if not hasattr(value, "shape") else tuple(value.shape)
        if len(shape) != len(arg.shape):
            raise input_error(f"input `{name}` has rank {len(shape)}, the program declares rank {len(arg.shape)}")
        for d, actual in zip(arg.shape, shape):
            if isinstance(d, str):
                if d in sizes and sizes[d] != actual:
                    raise ShapeError(
                        "E-SHAPE", f"size `{d}` is {sizes[d]} from `{bound_by[d]}` but {actual} from `{name}`"
                    )
                sizes[d] = int(actual)
                bound_by.setdefault(d, name)
    return sizes


def _whole(name: str, value: Any, prog: Program) -> Any:
    """An input every block reads whole: a NumPy array (a Dask array is computed)."""
    if isinstance(value, da.Array):
        value = value.compute()
    return _convert(name, value, prog.inputs[name].dtype)


def _as_dask(prog: Program, name: str, value: Any) -> Any:
    """An input as a Dask array of the declared element type (a NumPy one in one chunk)."""
    arg = prog.inputs[name]
    if not isinstance(value, da.Array):
        return da.from_array(_convert(name, value, arg.dtype), chunks=-1)
    if value.dtype != arg.dtype and not _int_to_float(value.dtype, arg.dtype):
        _check_cast(name, value.dtype, arg.dtype)
        value = value.astype(arg.dtype)
    # integers for a float input that only some values fit exactly stay integers here:
    # each block is converted and checked value by value when it runs (`_convert`)
    return value


def _one_task(prog: Program, given: dict[str, Any], sizes: dict[str, int]) -> dict[str, Any]:
    """The whole program as one task (inputs in one chunk, or no Dask input at all)."""
    inputs = {}
    for name, value in given.items():
        if isinstance(value, da.Array):
            value = value.rechunk(-1).to_delayed().ravel()[0] if value.ndim else value.to_delayed().item()
        inputs[name] = value
    result = dask.delayed(_run_block)(prog, inputs)
    return _outputs(result, prog, sizes, prog.outputs)


def _outputs(result, prog, sizes, wanted):
    out = {}
    for name in wanted:
        arg = prog.outputs[name]
        value = dask.delayed(operator.getitem)(result, name)
        if not arg.shape:
            out[name] = value
        else:
            out[name] = da.from_delayed(value, shape=_shape(arg.shape, sizes), dtype=arg.dtype)
    return out


def run(prog: Program, **arrays: Any) -> dict[str, Any]:
    """Runs ``prog`` over Dask arrays (NumPy arrays and scalars may be given too).

    Returns a dict from output name to a Dask array (the outputs along the chunked rows keep
    their blocks) or a ``dask.delayed`` value for a 0-d output; nothing runs until you
    compute them. In the row split the chunked axis is the first dimension of the first
    input given as a Dask array; every input declared with that size name first is split
    into the same blocks of rows, every other input is read whole by every block. In blocks
    with halos every size name along which a Dask input is in several chunks is chunked
    (as that input is) in every input that has it; the other inputs are read whole.
    """
    if not isinstance(prog, Program):
        raise TypeError(f"eqfuse.dask.run takes a program from eqfuse.compile, not {type(prog).__name__}")
    missing = [n for n in prog.inputs if n not in arrays]
    unknown = [n for n in arrays if n not in prog.inputs]
    if missing or unknown:
        what = [f"missing input `{n}`" for n in missing] + [f"unknown input `{n}`" for n in unknown]
        raise input_error("; ".join(what) + f"; the program's inputs are {', '.join(prog.inputs)}")
    sizes = _sizes(prog, arrays)
    split = _split_sizes(prog, arrays)
    if any(s != _first_axis(prog, arrays) for s in split):
        # chunked along more than the rows: blocks with halos, else whole rows
        halo, why = _halo_plan(prog, split)
        if halo is not None:
            return _run_with_halos(prog, arrays, sizes, halo)
        return _run_in_rows(prog, arrays, sizes, halo_refusal=why)
    return _run_in_rows(prog, arrays, sizes, halo_refusal=None)


def _first_axis(prog: Program, arrays: dict[str, Any]) -> str | None:
    """The chunked axis of the row split: the first dimension of the first Dask input."""
    return next(
        (
            arg.shape[0]
            for name, arg in prog.inputs.items()
            if isinstance(arrays[name], da.Array) and arg.shape and isinstance(arg.shape[0], str)
        ),
        None,
    )


def _split_sizes(prog: Program, arrays: dict[str, Any]) -> list[str]:
    """The size names along which some Dask input is in several chunks, in order."""
    out: list[str] = []
    for name, arg in prog.inputs.items():
        value = arrays[name]
        if isinstance(value, da.Array):
            for d, n in zip(arg.shape, value.numblocks):
                if isinstance(d, str) and n > 1 and d not in out:
                    out.append(d)
    return out


def _halo_plan(prog: Program, split: list[str]) -> tuple[dict[str, Any] | None, Any]:
    """The program's halo per chunked size (``eqfuse::chunks::halo_plan``), or the error
    that says why it cannot run in blocks with halos."""
    try:
        return json.loads(prog._native.halo_plan(split)), None
    except _eqfuse.RawError as e:
        return None, from_code(*e.args)


def _refused(first: Any, second: Any) -> ChunkError:
    """The refusal of the row split, and of blocks with halos when they were tried."""
    if second is None:
        return ChunkError(first.code, first.message, first.rendered)
    message = f"{first.message}; nor in blocks with halos: {second.message}"
    return ChunkError(first.code, message, message)


def _run_in_rows(prog: Program, arrays: dict[str, Any], sizes: dict[str, int], halo_refusal: Any) -> dict[str, Any]:
    """The row split (``eqfuse::chunks::split``): passes, globals and rows programs."""
    axis = _first_axis(prog, arrays)
    if axis is None:
        return _one_task(prog, arrays, sizes)
    try:
        plan = json.loads(prog._native.chunk_plan(axis))
    except _eqfuse.RawError as e:
        err = from_code(*e.args)
        plan = None
    if plan is None:
        along = [v for n, v in arrays.items() if prog.inputs[n].shape[:1] == (axis,) and isinstance(v, da.Array)]
        if all(v.numblocks[0] == 1 for v in along):
            return _one_task(prog, arrays, sizes)
        if halo_refusal is None:
            halo, halo_refusal = _halo_plan(prog, _split_sizes(prog, arrays))
            if halo is not None:
                return _run_with_halos(prog, arrays, sizes, halo)
        raise _refused(err, halo_refusal)

    # the blocks: those of the first chunked Dask input, for every chunked input
    first = next(arrays[n] for n in plan["chunked"] if isinstance(arrays[n], da.Array))
    row_chunks = first.chunks[0]
    chunked = {}
    for name in plan["chunked"]:
        value = _as_dask(prog, name, arrays[name])
        # one block of rows holds whole rows: the other dimensions in one chunk
        value = value.rechunk((row_chunks,) + tuple((d,) for d in value.shape[1:]))
        chunked[name] = list(value.to_delayed().ravel())
    common: dict[str, Any] = {n: np.int64(v) for n, v in sizes.items()}
    for name in prog.inputs:
        if name not in chunked:
            common[name] = _whole(name, arrays[name], prog)
    offsets = np.concatenate([[0], np.cumsum(row_chunks)[:-1]]).astype(np.int64)
    blocks = []
    for b, rows in enumerate(row_chunks):
        env = dict(common)
        env.update({n: parts[b] for n, parts in chunked.items()})
        env["__offset"] = np.int64(offsets[b])
        env["__rows"] = np.int64(rows)
        blocks.append(env)

    def call(source: str, env: dict[str, Any]):
        p = _recompile(source, prog.fast_math, prog.backend)
        return p, dask.delayed(_run_block)(p, {n: env[n] for n in p.inputs})

    for step in plan["passes"]:
        results = [call(step["source"], env)[1] for env in blocks]
        for c in step["combine"]:
            combiner = _recompile(c["source"], prog.fast_math, prog.backend)
            parts = [dask.delayed(operator.getitem)(r, c["name"]) for r in results]
            if c["carry"] is None:
                value = dask.delayed(_combine)(combiner, parts)
                common[c["name"]] = value
                for env in blocks:
                    env[c["name"]] = value
            else:
                carries = dask.delayed(_carries)(combiner, parts)
                for b, env in enumerate(blocks):
                    env[c["carry"]] = dask.delayed(operator.getitem)(carries, b)

    out: dict[str, Any] = {}
    if plan["globals"] is not None:
        gp, g = call(plan["globals"], common)
        out.update(_outputs(g, gp, sizes, [n for n, rows in plan["outputs"] if not rows]))
    if plan["rows"] is not None:
        rp = _recompile(plan["rows"], prog.fast_math, prog.backend)
        per_block = [dask.delayed(_run_block)(rp, {n: env[n] for n in rp.inputs}) for env in blocks]
        for name, from_rows in plan["outputs"]:
            if not from_rows:
                continue
            arg = rp.outputs[name]
            trailing = _shape(arg.shape[1:], sizes)
            parts = [
                da.from_delayed(dask.delayed(operator.getitem)(r, name), shape=(rows,) + trailing, dtype=arg.dtype)
                for r, rows in zip(per_block, row_chunks)
            ]
            out[name] = da.concatenate(parts, axis=0)
    return {name: out[name] for name, _ in plan["outputs"]}


def _part(result: dict[str, Any], name: str, index: tuple[slice, ...]) -> Any:
    """A block's own part of one output: its halo cut off."""
    return result[name][index]


def _halo_chunks(prog: Program, arrays: dict[str, Any], sizes: dict[str, int], axes: dict[str, Any]) -> dict[str, tuple]:
    """The chunks along each chunked size name (those of the first Dask input split along
    it), each at least as wide as the halo; one chunk where the array is narrower."""
    chunks: dict[str, tuple] = {}
    for name, arg in prog.inputs.items():
        value = arrays[name]
        if isinstance(value, da.Array):
            for d, c in zip(arg.shape, value.chunks):
                if d in axes and d not in chunks and len(c) > 1:
                    chunks[d] = tuple(c)
    for s, a in axes.items():
        c = chunks.get(s, (sizes[s],))
        if len(c) > 1 and a["halo"] > min(c):
            try:
                c = tuple(da.overlap.ensure_minimum_chunksize(a["halo"], c))
            except ValueError:  # the whole size is narrower than the halo
                c = (sizes[s],)
        chunks[s] = c
    return chunks


def _run_with_halos(prog: Program, arrays: dict[str, Any], sizes: dict[str, int], plan: dict[str, Any]) -> dict[str, Any]:
    """The whole program on every block and its halo (``eqfuse::chunks::halo_plan``): each
    output block keeps its own part."""
    axes = {a["size"]: a for a in plan["axes"]}
    order = list(axes)
    chunks = _halo_chunks(prog, arrays, sizes, axes)
    # the halo along each size: none where it is one chunk (its ends are the array's)
    depth = {s: (a["halo"] if len(chunks[s]) > 1 else 0) for s, a in axes.items()}
    blocked: dict[str, Any] = {}
    env: dict[str, Any] = {}
    for name, arg in prog.inputs.items():
        dims = list(arg.shape)
        if not any(d in axes for d in dims):
            env[name] = _whole(name, arrays[name], prog)
            continue
        value = _as_dask(prog, name, arrays[name])
        value = value.rechunk(tuple(chunks[d] if d in axes else (n,) for d, n in zip(dims, value.shape)))
        k_depth = {k: depth[d] for k, d in enumerate(dims) if d in axes and depth[d]}
        if k_depth:
            boundary = {k: ("periodic" if axes[dims[k]]["periodic"] else "none") for k in k_depth}
            value = da.overlap.overlap(value, depth=k_depth, boundary=boundary)
        blocked[name] = (dims, value.to_delayed())
    results = {}
    for g in np.ndindex(*(len(chunks[s]) for s in order)):
        block = dict(env)
        for name, (dims, parts) in blocked.items():
            block[name] = parts[tuple(g[order.index(d)] if d in axes else 0 for d in dims)]
        results[g] = dask.delayed(_run_block)(prog, block)

    def cut(s: str, b: int) -> slice:
        a, n = axes[s], len(chunks[s])
        left = depth[s] if (b > 0 or a["periodic"]) else 0
        return slice(left, left + chunks[s][b])

    out: dict[str, Any] = {}
    for name, arg in prog.outputs.items():
        dims = list(arg.shape)
        whole = _shape(tuple(dims), sizes)
        along = [d for d in dims if d in axes]
        grid = np.empty(tuple(len(chunks[d]) for d in along) + (1,) * (len(dims) - len(along)), dtype=object)
        for g, r in results.items():
            if any(g[order.index(s)] for s in order if s not in along):
                continue  # the same part again: every block along a size the output lacks
            pos = [g[order.index(d)] for d in along]
            index = tuple(cut(d, g[order.index(d)]) if d in axes else slice(None) for d in dims)
            shape = tuple(chunks[d][g[order.index(d)]] if d in axes else w for d, w in zip(dims, whole))
            piece = da.from_delayed(dask.delayed(_part)(r, name, index), shape=shape, dtype=arg.dtype)
            grid[tuple(pos) + (0,) * (len(dims) - len(along))] = piece
        # the grid's axes in the output's order of dimensions
        perm = _grid_order(dims, axes)
        out[name] = da.block(np.transpose(grid, perm).tolist())
    return out


def _grid_order(dims: list[Any], axes: dict[str, Any]) -> list[int]:
    """Where each dimension of an output sits in its block grid (chunked ones first)."""
    along = [k for k, d in enumerate(dims) if d in axes]
    rest = [k for k, d in enumerate(dims) if d not in axes]
    slot = {k: i for i, k in enumerate(along + rest)}
    return [slot[k] for k in range(len(dims))]
