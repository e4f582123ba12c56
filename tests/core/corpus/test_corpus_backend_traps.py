"""Corpus: programs that once took a backend's process down (issue 23, item 6).

Captured here like every corpus case, and run on every real backend in a child process by
test_corpus_backends.py. Each is a trap for what a backend is handed:

- normalizations without weight or bias: the backend must make the missing operands itself
  (tvm made tensor constants, whose serialization crashed TVM when ember hashed the module);
- tensors whose data does not start on the backend's allocation alignment, such as a slice of an
  input or an array from numpy (tvm's vectorized kernels crashed on them);
- the seed tutorial's ``scipy.fft.dct`` program: a graph, numpy, then a graph on
  ``torch.from_numpy`` of numpy's result.
"""
from __future__ import annotations

import pytest
import scipy.fft
import torch
import torch.nn.functional as F

from harness import Case, params, run_case, t

CASES: list[Case] = []


def add(name, fn, args, graphs=None, **kw):
    CASES.append(Case(name, fn, args, graphs, **kw))
    return fn


add("layer_norm_without_weight_or_bias", lambda x: F.layer_norm(x, (8,)), [(t(2, 8),)], 1)
add("layer_norm_over_two_dims_without_weight", lambda x: F.layer_norm(x, (3, 4)) * 2, [(t(2, 3, 4),)], 1)
add("group_norm_without_weight_or_bias", lambda x: F.group_norm(x, 2), [(t(2, 4, 3),)], 1)
add("batch_norm_eval_without_weight",
    lambda x, mean, var: F.batch_norm(x, mean, var, training=False),
    [(t(4, 3), t(3, seed=1), t(3, seed=2).abs() + 0.5)], 1)
add("slice_of_input_misaligned", lambda x: (x[1:] * 2 + 1).sin(), [(t(65),), (t(130),)], 2)
add("narrow_of_input_misaligned", lambda x: torch.tanh(x.narrow(1, 1, 7)) * x[:, :1],
    [(t(5, 8),)], 1)


def seed_tutorial_dct(x):
    x = x * 2
    x = scipy.fft.dct(x.numpy())
    x = torch.from_numpy(x)
    x = x * 2
    return x


add("seed_tutorial_scipy_dct", seed_tutorial_dct, [(t(5, 5),), (-t(5, 5),)], breaks="scipy")


@pytest.mark.parametrize("case", params(CASES))
def test_backend_traps(case):
    run_case(case)
