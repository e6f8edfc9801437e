"""Nested tuples, lists and dicts of arrays (what functions take and return), flattened
to a list of leaves and a structure to rebuild them with."""

from __future__ import annotations

from typing import Any


def flatten(obj: Any) -> tuple[list, Any]:
    """(leaves, structure): tuples, lists and dicts (by sorted key) are containers;
    everything else is a leaf."""
    leaves: list = []
    return leaves, _walk(obj, leaves)


def _walk(obj, leaves):
    if isinstance(obj, (tuple, list)) and not hasattr(obj, "shape"):
        kind = type(obj)
        return (kind, tuple(_walk(v, leaves) for v in obj))
    if isinstance(obj, dict):
        keys = sorted(obj, key=repr)
        return (dict, tuple(keys), tuple(_walk(obj[k], leaves) for k in keys))
    leaves.append(obj)
    return None


def unflatten(struct: Any, leaves: list) -> Any:
    it = iter(leaves)
    return _build(struct, it)


def _build(struct, it):
    if struct is None:
        return next(it)
    if struct[0] is dict:
        return {k: _build(s, it) for k, s in zip(struct[1], struct[2])}
    kind, subs = struct
    vals = [_build(s, it) for s in subs]
    if kind in (tuple, list):
        return kind(vals)
    try:
        return kind(*vals)  # a NamedTuple
    except TypeError:
        return kind(vals)
