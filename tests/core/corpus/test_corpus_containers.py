"""Corpus: Python constants, tuples, lists, dicts, slices, unpacking, and return structures."""
from __future__ import annotations

import collections
import dataclasses
from typing import NamedTuple

import pytest
import torch

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


Point = collections.namedtuple("Point", ["x", "y"])


class Pair(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor
    tag: str = "pair"


SCALES = (1.0, 2.0, 3.0)
TABLE = {"a": 1, "b": 2}

# -- constants and globals -------------------------------------------------------------------------
add("global_tuple_constant", lambda x: x * SCALES[1] + len(SCALES), [(t(2),)], 1)
add("global_dict_constant", lambda x: x * TABLE["b"] - TABLE.get("zzz", 0), [(t(2),)], 1)
add("local_constants", lambda x: x * 3.5 + (1, 2)[1] - {"k": 4}["k"], [(t(2),)], 1)
add("none_true_false_consts", lambda x: (x, None, True, False, 3, "s", 2.5), [(t(2),)], 0)

# -- tuples -----------------------------------------------------------------------------------------
add("tuple_arg_index", lambda xs: xs[0] + xs[1] * xs[-1], [((t(2), t(2, seed=1), t(2, seed=2)),)], 1)
add("tuple_concat_repeat", lambda x: (x,) + (x * 2,) + (1,) * 2, [(t(2),)], 1)
add("tuple_slicing", lambda xs: xs[1:], [((t(2), t(2, seed=1), t(2, seed=2)),)], 0)
add("tuple_of_python_args", lambda x, dims: x.permute(dims).contiguous(), [(t(2, 3, 4), (2, 0, 1)), (t(2, 3, 4), (1, 2, 0))], 2)
add("tuple_in_tuple", lambda x: ((x, (x + 1, x + 2)), x - 1), [(t(2),)], 1)
add("tuple_count_index", lambda x, tup: x * tup.count(2) + tup.index(3), [(t(2), (2, 2, 3)), (t(2), (3, 2))], 2)

# -- lists --------------------------------------------------------------------------------------------
def list_build(x):
    out = []
    out.append(x)
    out.extend([x * 2, x * 3])
    out.insert(0, x - 1)
    last = out.pop()
    out.reverse()
    return out, last


add("list_methods_local", list_build, [(t(2),)], 1)


def list_setitem_del(x):
    items = [x, x + 1, x + 2]
    items[0] = x * 10
    del items[1]
    items[1:] = [x - 5]
    return items


add("list_setitem_del_local", list_setitem_del, [(t(2),)], 1)
add("list_input_read", lambda xs: torch.stack(xs).sum(0) + len(xs), [([t(2), t(2, seed=1)],), ([t(2)] * 3,)], 2)
add("list_input_slice_copy", lambda xs: xs[::-1] + xs[:1], [([t(2), t(2, seed=1)],)], 0)
add("list_add_mul", lambda x: [x] * 2 + [x + 1], [(t(2),)], 1)
add("list_of_python_ints", lambda x, sizes: x.view(*sizes), [(t(6), [2, 3]), (t(6), [3, 2])], 2)
add("list_contains", lambda x, names: x * 2 if "a" in names else x, [(t(2), ["a", "b"]), (t(2), ["b"])], 1)
add("list_copy_then_mutate", lambda xs: (lambda c: (c.append(c[0] * 2), c)[1])(list(xs)),
    [([t(2), t(2, seed=1)],)], 1)
add("list_index_count", lambda x, vals: x * vals.index(5) + vals.count(1), [(t(2), [1, 5, 1]), (t(2), [5])], 2)


def list_inplace_add_mul(x, arg):
    local = [1]
    alias = local
    local += (2, 3)  # list.__iadd__ extends in place: the alias sees it
    local *= 2
    arg += [x * 2]  # the caller's list changes too
    return x * len(alias), alias


add("list_inplace_add_mul_aliases", list_inplace_add_mul, [(t(2), [0]), (t(2), [t(2, seed=1)])], 2)

# -- dicts --------------------------------------------------------------------------------------------
def dict_build(x):
    d = {"a": x, "b": x * 2}
    d["c"] = d["a"] + d["b"]
    d.update({"d": x - 1})
    e = d.pop("a")
    d.setdefault("f", x * 0)
    return d, e, list(d.keys()), len(d)


add("dict_methods_local", dict_build, [(t(2),)], 1)
add("dict_input_read", lambda d: d["w"] * d["x"] + d.get("b", 0), [({"w": t(2), "x": t(2, seed=1)},),
                                                                   ({"w": t(2), "x": t(2, seed=1), "b": 2.0},)], 2)
add("dict_items_metadata_only", lambda d: [k + str(v.dim()) for k, v in d.items()], [({"p": t(2), "q": t(2, 2)},)], 0)


def dict_iteration(d):
    out = {}
    for k in d:
        out[k.upper()] = d[k] + 1
    for k, v in d.items():
        out[k + "_sq"] = v * v
    return out


add("dict_iteration", dict_iteration, [({"a": t(2), "b": t(3)},)], 1)
add("dict_int_keys", lambda d, x: x * d[1] + d[2], [({1: 2.0, 2: 3.0}, t(2)), ({1: 5.0, 2: 3.0}, t(2))], 2)
add("dict_in_and_len", lambda d, x: x * len(d) if "k" in d else x, [({"k": 1}, t(2)), ({"j": 1}, t(2))], 1)
add("dict_constructor_kwargs", lambda x: dict(a=x, b=x + 1), [(t(2),)], 1)
add("dict_from_pairs", lambda x: dict([("a", x), ("b", x * 2)]), [(t(2),)], 1)
add("dict_merge_unpack", lambda d, x: {**d, "z": x * 2}, [({"a": 1, "b": t(2)}, t(2))], 1)

# -- slices --------------------------------------------------------------------------------------------
add("tensor_slices", lambda x: (x[1:], x[:, ::2], x[-1], x[..., 0], x[None, :2]), [(t(4, 5),), (t(3, 6),)], 2)
add("tensor_slice_from_python", lambda x, a, b: x[a:b], [(t(6), 1, 4), (t(6), 0, 2)], 2)
add("slice_object", lambda x, s: x[s], [(t(6), slice(1, 5, 2)), (t(6), slice(None, 3))], 2)
add("tensor_index_with_tensor", lambda x, idx: x[idx], [(t(5, 2), torch.tensor([0, 3, 1]))], 1)
add("tensor_bool_mask_index", lambda x: x[x > 0], [(t(6),)], None,
    breaks="depends on tensor data")

# -- unpacking ------------------------------------------------------------------------------------------
def unpack_basic(x):
    a, b = x.shape
    (c, d), e = (x[0], x[1]), x.sum()
    return a * c + b * d + e


add("unpack_shape_and_nested", unpack_basic, [(t(2, 3),), (t(2, 4),)], 2)


def unpack_starred(xs):
    first, *rest = xs
    *init, last = xs
    a, *mid, z = xs
    return first + last, len(rest), init, mid, a - z


add("unpack_starred", unpack_starred, [([t(2), t(2, seed=1), t(2, seed=2), t(2, seed=3)],), ([t(2), t(2, seed=1)],)], 2)


def unpack_tensor(x):
    a, b, c = x
    return a * b - c


add("unpack_tensor_rows", unpack_tensor, [(t(3, 2),)], 1)


def unpack_split(x):
    left, right = x.split(2, dim=-1)
    q, k, v = torch.chunk(x, 3, dim=0)
    return left * right, q + k + v


add("unpack_split_chunk", unpack_split, [(t(3, 4),)], 1)
add("starred_call_args", lambda x, shape: x.reshape(*shape, -1), [(t(12), (2, 3)), (t(12), (4,))], 2)
add("swap_via_tuple", lambda a, b: (lambda a, b: (a - b, b))(*(b, a)), [(t(2), t(2, seed=1))], 1)

# -- returns --------------------------------------------------------------------------------------------
add("return_namedtuple", lambda x: Point(x + 1, x * 2), [(t(2),)], 1)
add("return_typing_namedtuple_default", lambda x: Pair(x, x - 1), [(t(2),)], 1)
add("namedtuple_input_field_access", lambda p: p.x * p.y + p[0], [(Point(t(2), t(2, seed=1)),)], 1)
add("namedtuple_kwargs_and_replace_fields", lambda x: Pair(second=x, first=x * 3, tag="t").first,
    [(t(2),)], 1)
add("return_none", lambda x: None, [(t(2),)], 0)
add("return_input_unchanged", lambda x: x, [(t(2),), (t(3),)], 0)
add("return_inputs_in_structure", lambda x, y: {"x": x, "pair": (y, x), "lst": [x * 2]}, [(t(2), t(2, seed=1))], 1)
add("return_list_input_itself", lambda xs: xs, [([t(2), 1],)], 0)
add("return_same_tensor_twice", lambda x: (x * 2,) * 2, [(t(2),)], 1)
add("return_python_scalar_from_shape", lambda x: x.shape[0] * 2, [(t(3),), (t(4),)], 0)
add("return_torch_size", lambda x: x.shape, [(t(3, 2),)], 0)
add("return_dtype_device", lambda x: (x.dtype, x.device, x.ndim), [(t(2),), (t(2, dtype=torch.float16),)], 0)
add("return_constant_only", lambda: 42, [()], 0)
add("return_nested_list_dict", lambda x: [{"a": [x, (x + 1,)]}, 3], [(t(2),)], 1)


@dataclasses.dataclass
class Config:
    scale: float
    name: str


add("dataclass_attr_read", lambda x, cfg: x * cfg.scale if cfg.name == "s" else x,
    [(t(2), Config(2.0, "s")), (t(2), Config(3.0, "s")), (t(2), Config(2.0, "n"))], 2)


class Obj:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return x * self.w


add("plain_object_method_and_attr", lambda x, o: o.apply(x) + o.w, [(t(2), Obj(2.0)), (t(2), Obj(t(2, seed=4)))], 2)


@pytest.mark.parametrize("case", params(CASES))
def test_containers(case):
    run_case(case)
