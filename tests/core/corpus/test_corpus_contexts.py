"""Corpus: torch's context managers and the global state they switch.

Besides results, the harness checks after every call that grad mode, inference mode, autocast,
the default dtype and device and the random generator are as the eager call left them (issue 23
item 7: one compiled call with an ``inference_mode`` block used to leave grad mode off for the
rest of the program).
"""
from __future__ import annotations

import pytest
import torch

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


def inference_block(x):
    with torch.inference_mode():
        y = x * 2
    return y + 1


add("inference_mode_block", inference_block, [(t(3),), (t(3).requires_grad_(),)], breaks="inference_mode")


def autocast_block(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    return y.float() + 1, y.dtype


add("autocast_block", autocast_block, [(t(4, 4), t(4, 4, seed=2))], 1)


def set_grad_enabled_call(x):
    torch.set_grad_enabled(False)  # switches at once, and stays switched after the call
    y = x * 2
    torch.set_grad_enabled(True)
    return y, y.requires_grad


add("set_grad_enabled_as_call", set_grad_enabled_call, [(t(3).requires_grad_(),)], 1)


def default_dtype_read(x):
    return x.to(torch.get_default_dtype()) + torch.ones(3)


add("default_dtype_read", default_dtype_read, [(t(3, dtype=torch.float64),)], 1)


def raises_in_no_grad(x):
    with torch.no_grad():
        y = x * 2
        if y.shape[0] == 3:
            raise ValueError("leaves through the with-block")
    return y


add("exception_leaves_no_grad_block", raises_in_no_grad, [(t(3).requires_grad_(),), (t(2).requires_grad_(),)],
    breaks="ValueError")


def lookup_in_no_grad(table, ids):
    with torch.no_grad():
        y = torch.nn.functional.embedding(ids, table) * 2  # raises at run time on a bad id
    return y + table.sum()


add("graph_raises_inside_no_grad", lookup_in_no_grad,
    [(t(5, 3).requires_grad_(), torch.tensor([0, 4])), (t(5, 3).requires_grad_(), torch.tensor([0, 9]))], 1)


def print_inside_no_grad(x):
    y = x * 2
    with torch.no_grad():
        z = y * 3
        print("corpus print inside no_grad", torch.is_grad_enabled())
        z = z + y
    return z + x, z.requires_grad


add("break_inside_no_grad", print_inside_no_grad, [(t(3).requires_grad_(),), (t(3),)], breaks="print")


def branch_inside_enable_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
            if y.sum() > 0:
                y = y + 1
        z = y * 3
    return z, z.requires_grad, y.requires_grad


add("data_dependent_branch_inside_nested_blocks", branch_inside_enable_grad,
    [(t(3, seed=1).requires_grad_(),), (-t(3, seed=1).requires_grad_(),)], breaks="data-dependent")


def item_inside_autocast(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
        scale = y.float().abs().max().item()
        z = (y @ w) / scale
    return z.float(), z.dtype


add("item_inside_autocast", item_inside_autocast, [(t(4, 4), t(4, 4, seed=2))], breaks="item")


def print_inside_try_finally(x, log):
    y = x * 2
    try:
        log.append("try")
        print("corpus print inside try")
        if y.shape[0] == 3:
            raise KeyError("after the break")
        y = y + 1
    except KeyError as e:
        log.append(str(e))
        y = y - 1
    finally:
        log.append("finally")
    return y


add("break_inside_try_except_finally", print_inside_try_finally, [(t(3), []), (t(2), [])], breaks="print")


@pytest.mark.parametrize("case", params(CASES))
def test_contexts(case):
    run_case(case)
