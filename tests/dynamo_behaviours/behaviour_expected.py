"""The one table of ported Dynamo behaviours that ember fails today: key ``<torch test file>::<case>``,
value the reason ember gives. Each entry runs as a strict xfail, so a fix shows up as XPASS and the
table only shrinks. Written by ``python -m tests.dynamo_behaviours.refresh``: rerun it after a
capture change rather than editing by hand."""
from __future__ import annotations


EXPECTED: dict[str, str] = {
    # 22
    **dict.fromkeys([
        'test_functions::partial_hasattr_annotations',
        'test_functions::partial_hasattr_args',
        'test_functions::partial_hasattr_call',
        'test_functions::partial_hasattr_class',
        'test_functions::partial_hasattr_closure',
        'test_functions::partial_hasattr_code',
        'test_functions::partial_hasattr_defaults',
        'test_functions::partial_hasattr_dict',
        'test_functions::partial_hasattr_doc',
        'test_functions::partial_hasattr_eq',
        'test_functions::partial_hasattr_func',
        'test_functions::partial_hasattr_get',
        'test_functions::partial_hasattr_globals',
        'test_functions::partial_hasattr_hash',
        'test_functions::partial_hasattr_keywords',
        'test_functions::partial_hasattr_kwdefaults',
        'test_functions::partial_hasattr_module',
        'test_functions::partial_hasattr_name',
        'test_functions::partial_hasattr_qualname',
        'test_functions::partial_hasattr_reduce',
        'test_functions::partial_hasattr_repr',
        'test_functions::partial_hasattr_setattr',
    ], 'fullgraph: hasattr on a PartialVar'),
    # 14
    **dict.fromkeys([
        'test_functions::numpy_array_attributes',
        'test_functions::numpy_copy_method',
        'test_functions::numpy_fftshift',
        'test_functions::numpy_linalg_norm',
        'test_functions::numpy_mean_then_sum',
        'test_functions::numpy_meshgrid_of_tensors',
        'test_functions::numpy_operators',
        'test_functions::numpy_reductions_with_axis',
        'test_functions::numpy_reshape_method',
        'test_functions::numpy_roundtrip_size',
        'test_functions::numpy_size_attribute',
        'test_functions::numpy_transpose_method',
        'test_functions::return_numpy_transpose',
        'test_functions::return_several_numpy_arrays',
    ], "fullgraph: Tensor.numpy() needs the tensor's data (graph break)"),
    # 6
    **dict.fromkeys([
        'test_functions::global_defaultdict_closure_factory',
        'test_functions::global_defaultdict_dict_factory',
        'test_functions::global_defaultdict_lambda_factory',
        'test_functions::global_defaultdict_list_factory',
        'test_functions::global_defaultdict_set_factory',
        'test_functions::global_defaultdict_tuple_factory',
    ], 'fullgraph: call to defaultdict.clear is not supported (not a torch op, not Python code to inline)'),
    # 5
    **dict.fromkeys([
        'test_functions::frozenset_of_tensor',
        'test_functions::int_in_set_of_tensor',
        'test_functions::membership_by_identity_not_value',
        'test_functions::membership_of_inplace_results',
        'test_functions::set_of_tensor_and_its_inplace_alias',
    ], 'fullgraph: a set element needs a Python value, got a tensor'),
    # 5
    **dict.fromkeys([
        'test_functions::numpy_setitem_ellipsis_0',
        'test_functions::numpy_setitem_ellipsis_1',
        'test_functions::numpy_setitem_ellipsis_2',
        'test_functions::numpy_setitem_ellipsis_3',
        'test_functions::numpy_setitem_ellipsis_4',
    ], 'fullgraph: item assignment on a ndarray value is not supported'),
    # 5
    **dict.fromkeys([
        'test_functions::is_floating_point_function_forms',
        'test_functions::move_to_meta_device',
        'test_functions::reduce_single_element',
        'test_functions::tensor_new_with_shape',
        'test_functions::tensor_new_with_size',
    ], 'graphs: ember 0, torch.compile 1'),
    # 4
    **dict.fromkeys([
        'test_functions::deque_edits',
        'test_functions::vmapped_inplace_identity',
        'test_functions::vmapped_inplace_on_clone_identity',
        'test_functions::vmapped_inplace_two_args_identity',
    ], 'fullgraph: call to collections.deque is not supported (not a torch op, not Python code to inline)'),
    # 4
    **dict.fromkeys([
        'test_functions::np_finfo_of_dtype',
        'test_functions::np_finfo_of_info',
        'test_functions::np_finfo_of_str',
        'test_functions::np_finfo_of_type',
    ], 'graphs: ember 0, torch.compile 1 (graph break in _finfo_max <file>: call to numpy.finfo is not supported (not a torch op, not Python code to inline) File "/work/wt/dynamo-port/tests/dynamo_be...)'),
    # 3
    **dict.fromkeys([
        'test_functions::defaultdict_setdefault_existing',
        'test_functions::defaultdict_setdefault_missing',
        'test_functions::defaultdict_setdefault_missing_none',
    ], 'fullgraph: call to defaultdict.fromkeys is not supported (not a torch op, not Python code to inline)'),
    # 3
    **dict.fromkeys([
        'test_functions::float_of_one_element_tensor_1.5',
        'test_functions::float_of_one_element_tensor_3',
        'test_functions::float_of_one_element_tensor_true',
    ], 'fullgraph: float() of a tensor reads its data (graph break)'),
    # 2
    **dict.fromkeys([
        'test_functions::equal_numpy_dtypes_share_a_graph_float',
        'test_functions::equal_numpy_infos_share_a_graph_float',
    ], "NameError: name 'np' is not defined"),
    # 2
    **dict.fromkeys([
        'test_functions::numpy_dtype_object_call',
        'test_functions::numpy_iinfo_constant',
    ], 'fullgraph: call to numpy.dtype is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_functions::namedtuple_made_inside',
        'test_functions::namedtuple_with_defaults',
    ], 'fullgraph: call to sys.intern is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_functions::bool_of_one_element_tensor_0',
        'test_functions::bool_of_one_element_tensor_1.0',
    ], "fullgraph: data-dependent branch: the condition is a tensor's value (e.g. `if x.sum() < 0:`)"),
    # 2
    **dict.fromkeys([
        'test_functions::pybind_object_attribute_false',
        'test_functions::pybind_object_attribute_true',
    ], "fullgraph: ember internal error at LOAD_ATTR: AttributeError: 'builtin_function_or_method' object has no attribute '__code__'"),
    # 2
    **dict.fromkeys([
        'test_functions::int_of_one_element_tensor_4',
        'test_functions::int_of_one_element_tensor_false',
    ], 'fullgraph: int() of a tensor reads its data (graph break)'),
    # 2
    **dict.fromkeys([
        'test_functions::str_of_object_default_repr_class_part',
        'test_functions::str_of_object_with_dunder_str',
    ], 'fullgraph: str called with tensors or captured containers'),
    # 2
    **dict.fromkeys([
        'test_functions::inplace_on_clone_keeps_identity',
        'test_functions::inplace_result_is_its_input',
    ], 'wrong: out[0]: False != True'),
    # 2
    **dict.fromkeys([
        'test_functions::dict_keys_view_is_live',
        'test_functions::inplace_identity_survives_a_break',
    ], 'wrong: out[1]: False != True'),
    # 1
    **dict.fromkeys([
        'test_functions::len_and_dunder_len',
    ], "fullgraph: Tensor.__len__() needs the tensor's data (graph break)"),
    # 1
    **dict.fromkeys([
        'test_functions::fsdp_storage_size_helper',
    ], 'fullgraph: Tensor.untyped_storage is not supported in captured code'),
    # 1
    **dict.fromkeys([
        'test_functions::constant_is__tensor',
    ], 'fullgraph: _operator.is_ called with tensors or captured containers'),
    # 1
    **dict.fromkeys([
        'test_functions::constant_is_not_tensor',
    ], 'fullgraph: _operator.is_not called with tensors or captured containers'),
    # 1
    **dict.fromkeys([
        'test_functions::dict_with_parameter_key',
    ], 'fullgraph: a dict key needs a Python value, got a tensor'),
    # 1
    **dict.fromkeys([
        'test_functions::tensor_from_range_of_size',
    ], 'fullgraph: a range cannot be baked into a graph as a constant'),
    # 1
    **dict.fromkeys([
        'test_functions::list_index_by_scalar_tensor',
    ], 'fullgraph: a sequence index needs a Python value, got a tensor'),
    # 1
    **dict.fromkeys([
        'test_functions::type_with_tensor_class',
    ], 'fullgraph: a tensortype cannot be baked into a graph as a constant'),
    # 1
    **dict.fromkeys([
        'test_functions::dataclass_default_factories',
    ], "fullgraph: assignment to attribute 'scale' of a ObjectVar"),
    # 1
    **dict.fromkeys([
        'test_functions::checkpoint_valid_flag',
    ], 'fullgraph: call to _EngineBase.is_checkpoint_valid is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::chain_from_iterable_mixed',
    ], 'fullgraph: call to chain.from_iterable is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::defaultdict_made_inside_updates',
    ], 'fullgraph: call to collections.defaultdict is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::fromkeys_of_dict_kinds',
    ], 'fullgraph: call to dict.fromkeys is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::combinations_build_shapes',
    ], 'fullgraph: call to itertools.combinations is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::islice_over_chain',
    ], 'fullgraph: call to itertools.islice is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::product_of_tensors_and_ints',
    ], 'fullgraph: call to itertools.product is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::zip_longest_with_fillvalue',
    ], 'fullgraph: call to itertools.zip_longest is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::numpy_finfo_constant',
    ], 'fullgraph: call to numpy.finfo is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::numpy_random_difference',
    ], 'fullgraph: call to numpy.random.RandomState.rand is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::numpy_zeros_like_with_dtype',
    ], 'fullgraph: call to numpy.zeros_like is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::ordered_dict_subclass_from_kwargs',
    ], 'fullgraph: call to test_functions_behaviours.OrderedSub is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::distributions_log_prob',
    ], 'fullgraph: call to torch.distributions.normal.Normal is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::no_grad_decorated_inner_function',
    ], 'fullgraph: calling a GradModeContext is not supported'),
    # 1
    **dict.fromkeys([
        'test_functions::instance_equality_default',
    ], "fullgraph: comparison '==' between UserObjectVar and UserObjectVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_functions::dict_of_user_mutable_mapping',
    ], 'fullgraph: ember internal error at CALL: ValueError: not enough values to unpack (expected 2, got 1)'),
    # 1
    **dict.fromkeys([
        'test_functions::dict_update_forms',
    ], 'fullgraph: expected a mapping, got a ListVar'),
    # 1
    **dict.fromkeys([
        'test_functions::double_star_user_mapping',
    ], 'fullgraph: expected a mapping, got a _Store value'),
    # 1
    **dict.fromkeys([
        'test_functions::frozenset_has_no_add',
    ], "fullgraph: frozenset object has no attribute 'add'"),
    # 1
    **dict.fromkeys([
        'test_functions::frozenset_has_no_clear',
    ], "fullgraph: frozenset object has no attribute 'clear'"),
    # 1
    **dict.fromkeys([
        'test_functions::frozenset_has_no_discard',
    ], "fullgraph: frozenset object has no attribute 'discard'"),
    # 1
    **dict.fromkeys([
        'test_functions::frozenset_has_no_pop',
    ], "fullgraph: frozenset object has no attribute 'pop'"),
    # 1
    **dict.fromkeys([
        'test_functions::frozenset_has_no_remove',
    ], "fullgraph: frozenset object has no attribute 'remove'"),
    # 1
    **dict.fromkeys([
        'test_functions::frozenset_has_no_update',
    ], "fullgraph: frozenset object has no attribute 'update'"),
    # 1
    **dict.fromkeys([
        'test_functions::hasattr_on_dict_and_tensor',
    ], 'fullgraph: hasattr on a DictVar'),
    # 1
    **dict.fromkeys([
        'test_functions::typed_namedtuple_duck_check',
    ], 'fullgraph: hasattr on a TupleVar'),
    # 1
    **dict.fromkeys([
        'test_functions::typed_namedtuple_methods',
    ], "fullgraph: method 'width' of a TupleVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_functions::min_max_of_scalar_tensors',
    ], 'fullgraph: min() over tensors compares tensor data (use torch.maximum/minimum)'),
    # 1
    **dict.fromkeys([
        'test_functions::add_to_global_set',
    ], 'fullgraph: mutating a set that exists outside the captured code (a graph break runs it in Python)'),
    # 1
    **dict.fromkeys([
        'test_functions::list_repeat_left',
    ], "fullgraph: operator '*' on int value and ListVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_functions::sorted_tuples_with_key',
    ], 'fullgraph: sorted called with tensors or captured containers'),
    # 1
    **dict.fromkeys([
        'test_functions::lru_cache_wrapped_function_inlines',
    ], 'fullgraph: test_functions_behaviours._cached_sin (functools.lru_cache) called with tensors or unhashable arguments'),
    # 1
    **dict.fromkeys([
        'test_functions::foreach_lerp_inplace_tensor_weight',
    ], 'fullgraph: torch._VariableFunctionsClass._foreach_lerp_ depends on tensor data (DataDependentOutputException)'),
    # 1
    **dict.fromkeys([
        'test_functions::foreach_pow_scalar_tensor_base',
    ], 'fullgraph: torch._VariableFunctionsClass._foreach_pow depends on tensor data (DataDependentOutputException)'),
    # 1
    **dict.fromkeys([
        'test_functions::filter_on_tensor_value_breaks',
    ], 'graphs: ember 0, torch.compile 1 (ember: _filter_by_value <file> runs eagerly: data-dependent branch: the condition is a tensor\'s value (e.g. `if x.sum() < 0:`) File "/work/wt/dynamo-port/tes...)'),
    # 1
    **dict.fromkeys([
        'test_functions::inner_def_after_break_no_recompile',
    ], 'graphs: ember 0, torch.compile 1 (ember: inner_def_after_break_no_recompile <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/tests/dynamo...)'),
    # 1
    **dict.fromkeys([
        'test_functions::inner_lambda_after_break_no_recompile',
    ], 'graphs: ember 0, torch.compile 1 (ember: inner_lambda_after_break_no_recompile <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/tests/dyn...)'),
    # 1
    **dict.fromkeys([
        'test_functions::partial_of_local_lambda_across_break',
    ], 'graphs: ember 0, torch.compile 1 (ember: partial_of_local_lambda_across_break <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/tests/dyna...)'),
    # 1
    **dict.fromkeys([
        'test_functions::partials_mixed_kinds_across_break',
    ], 'graphs: ember 0, torch.compile 1 (ember: partials_mixed_kinds_across_break <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/tests/dynamo_...)'),
    # 1
    **dict.fromkeys([
        'test_functions::partials_live_across_a_break',
    ], 'graphs: ember 0, torch.compile 2 (ember: partials_live_across_a_break <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/tests/dynamo_behav...)'),
    # 1
    **dict.fromkeys([
        'test_functions::closure_rebound_between_two_broken_calls',
    ], 'graphs: ember 0, torch.compile 3 (ember: closure_rebound_between_two_broken_calls <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/tests/...)'),
    # 1
    **dict.fromkeys([
        'test_functions::rebinding_partial_used_by_closure_across_break',
    ], 'graphs: ember 0, torch.compile 3 (ember: rebinding_partial_used_by_closure_across_break <file> runs eagerly: print() is a side effect outside PyTorch (graph break) File "/work/wt/dynamo-port/...)'),
    # 1
    **dict.fromkeys([
        'test_functions::zip_strict_unequal_lengths_raises',
    ], 'graphs: ember 1, torch.compile 0 (graph break in _zip_strict <file>: zip(strict=True) over sequences of different lengths File "/work/wt/dynamo-port/tests/dynamo_behaviours/test_functions_beh...)'),
    # 1
    **dict.fromkeys([
        'test_functions::mutates_default_tensor_of_forward',
    ], 'graphs: ember 2, torch.compile 1 (graph break in call <file>: a tensor used as a default argument value File "/work/wt/dynamo-port/core/ember/compiled.py", line 349, in call return self(*args...)'),
    # 1
    **dict.fromkeys([
        'test_functions::mutates_default_tensor_of_global_function',
    ], 'graphs: ember 2, torch.compile 1 (graph break in mutates_default_tensor_of_global_function <file>: a tensor used as a default argument value File "/work/wt/dynamo-port/tests/dynamo_behaviours...)'),
    # 1
    **dict.fromkeys([
        'test_functions::unread_entries_do_not_recompile',
    ], 'graphs: ember 4, torch.compile 2'),
    # 1
    **dict.fromkeys([
        'test_functions::dict_values_view_is_live',
    ], 'wrong: out: 1 != 3'),
}
