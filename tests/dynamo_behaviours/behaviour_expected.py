"""The one table of ported Dynamo behaviours that ember fails today: key ``<torch test file>::<case>``,
value the reason ember gives. Each entry runs as a strict xfail, so a fix shows up as XPASS and the
table only shrinks. Written by ``python -m tests.dynamo_behaviours.refresh``: rerun it after a
capture change rather than editing by hand."""
from __future__ import annotations


EXPECTED: dict[str, str] = {
    # 4
    **dict.fromkeys([
        'test_sets::frozenset_from_dict_reuses_hashes',
        'test_sets::frozenset_subclass_from_dict_reuses_hashes',
        'test_sets::set_from_dict_reuses_hashes',
        'test_sets::set_subclass_from_dict_reuses_hashes',
    ], 'fullgraph: call to test_sets_behaviours.HashCounting is not supported (not a torch op, not Python code to inline)'),
    # 4
    **dict.fromkeys([
        '_test_misc_part2::ndarray_live_across_a_break',
        '_test_misc_part2::two_ndarrays_across_a_break',
        'test_ctx_manager::class_manager_breaking_in_enter',
        'test_unspec::size_kept_across_break',
    ], 'graphs: ember 1, torch.compile 2 (break: print() is a side effect outside PyTorch (graph break))'),
    # 3
    **dict.fromkeys([
        'test_dicts::cmp_eq_key_raises_dict',
        'test_dicts::cmp_eq_key_raises_dict_subclass',
        'test_dicts::cmp_eq_key_raises_ordered_dict',
    ], 'fullgraph: a BadCmp as a set element or dict key (its class writes __hash__ or __eq__)'),
    # 3
    **dict.fromkeys([
        'test_exceptions::exception_context_cause_suppress_descriptors',
        'test_exceptions::longer_context_cycle',
        'test_exceptions::self_referencing_context_does_not_hang',
    ], "fullgraph: assignment to attribute '__context__' of a ConstVar"),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::disable_saved_tensors_hooks_decorator',
        'test_ctx_manager::disable_saved_tensors_hooks_inside_disabled',
        'test_ctx_manager::nested_disable_saved_tensors_hooks',
    ], 'fullgraph: torch._C._autograd.pybind11_detail_function_record_v1_system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1._saved_tensors_hooks_get_disabled_error_message may chang...'),
    # 3
    **dict.fromkeys([
        '_test_misc_part2::numpy_force_false',
        'test_functions::numpy_size_attribute',
        'test_functions::reduce_single_element',
    ], 'graphs: ember 0, torch.compile 1'),
    # 2
    **dict.fromkeys([
        '_test_misc_part1::attribute_set_on_input_tensor',
        '_test_misc_part1::attribute_set_on_intermediate',
    ], "fullgraph: assignment to attribute 'offload_me' of a TensorVar"),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_view_mapping_attribute',
        'test_dicts::dict_view_mapping_is_live',
    ], "fullgraph: attribute 'mapping' of a DictViewVar is not supported"),
    # 2
    **dict.fromkeys([
        'test_functions::namedtuple_made_inside',
        'test_functions::namedtuple_with_defaults',
    ], 'fullgraph: call to sys.intern is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_functions::int_in_list_of_tensor',
        'test_functions::int_in_tuple_of_tensor',
    ], "fullgraph: data-dependent branch: the condition is a tensor's value (e.g. `if x.sum() < 0:`)"),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_update_from_mapping_proxy',
        'test_dicts::mapping_proxy_of_local_dict',
    ], 'fullgraph: mappingproxy called with tensors or captured containers'),
    # 2
    **dict.fromkeys([
        '_test_misc_part2::next_advances_argument_range_iterator',
        'test_generator::next_of_unstarted_generator_argument',
    ], 'fullgraph: next() on something that is not an iterator made in the captured code'),
    # 2
    **dict.fromkeys([
        'test_functions::str_of_object_default_repr_class_part',
        'test_functions::str_of_object_with_dunder_str',
    ], 'fullgraph: str called with tensors or captured containers'),
    # 2
    **dict.fromkeys([
        'test_ctx_manager::grad_context_made_before_break',
        'test_ctx_manager::grad_context_on_stack_during_break',
    ], 'graphs: ember 0, torch.compile 2 (runs eagerly: print() is a side effect outside PyTorch (graph break))'),
    # 2
    **dict.fromkeys([
        'test_ctx_manager::break_inside_contextmanager_setup',
        'test_ctx_manager::break_inside_contextmanager_with_side_effects',
    ], 'graphs: ember 3, torch.compile 0 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part1::explicit_dunder_iter_of_tensor',
    ], "fullgraph: Tensor.__iter__() needs the tensor's data (graph break)"),
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
        'test_dicts::frozen_dataclass_as_dict_key',
    ], 'fullgraph: a Point as a set element or dict key (its class writes __hash__ or __eq__)'),
    # 1
    **dict.fromkeys([
        'test_dicts::equal_user_keys_share_an_entry',
    ], 'fullgraph: a ValueKey as a set element or dict key (its class writes __hash__ or __eq__)'),
    # 1
    **dict.fromkeys([
        'test_dicts::namedtuple_holding_partial_as_key',
    ], 'fullgraph: a dict key needs a Python value, got a TupleVar'),
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
        '_test_misc_part2::catch_warnings_context',
    ], 'fullgraph: a with-block over a UserObjectVar (no Python __enter__/__exit__ to inline): it is entered in Python at a graph break'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::attribute_added_to_namedtuple_subclass_argument',
    ], "fullgraph: assignment to attribute 'extra' of a TupleVar"),
    # 1
    **dict.fromkeys([
        '_test_misc_part1::attributes_set_on_new_tensor',
    ], "fullgraph: assignment to attribute 'grad' of a TensorVar"),
    # 1
    **dict.fromkeys([
        'test_dicts::property_setter_writing_instance_dict',
    ], "fullgraph: assignment to property 'x'"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_of_bound_method',
    ], "fullgraph: attribute '__dict__' of a BoundMethodVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_functions::checkpoint_valid_flag',
    ], 'fullgraph: call to _EngineBase.is_checkpoint_valid is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::getset_descriptor_get',
    ], 'fullgraph: call to getset_descriptor.__get__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::mapping_proxy_argument_follows_its_dict',
    ], 'fullgraph: call to mappingproxy.values is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::numpy_random_difference',
    ], 'fullgraph: call to numpy.random.RandomState.rand is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::next_of_range_iterator',
    ], 'fullgraph: call to range.__iter__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_exceptions::custom_exception_with_init_args',
    ], 'fullgraph: call to test_exceptions_behaviours.CustomWithArgs is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_list::list_subclass_new_calls_super',
    ], 'fullgraph: call to test_list_behaviours.ListWithNew is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_list::list_grandchild_of_new_override',
    ], 'fullgraph: call to test_list_behaviours.ListWithNewChild is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_list::return_list_grandchild',
    ], 'fullgraph: call to test_list_behaviours.PlainListChild is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_list::tuple_grandchild_constructed',
    ], 'fullgraph: call to test_list_behaviours.PlainTupleChild is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_list::tuple_subclass_new_calls_super',
    ], 'fullgraph: call to test_list_behaviours.TupleWithNew is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_list::tuple_grandchild_of_new_override',
    ], 'fullgraph: call to test_list_behaviours.TupleWithNewChild is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part1::custom_setattr_on_new_object',
    ], 'fullgraph: call to test_misc_part1_behaviours.PrefixedAttrs is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::distributions_log_prob',
    ], 'fullgraph: call to torch.distributions.normal.Normal is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::build_return_type_structseq',
    ], 'fullgraph: call to torch.return_types.max is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::tuple_of_return_type_structseq',
    ], 'fullgraph: call to torch.return_types.qr is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::enum_built_from_ordered_dict',
    ], 'fullgraph: calling enum Enum to make a new enum'),
    # 1
    **dict.fromkeys([
        'test_functions::dict_of_user_mutable_mapping',
    ], 'fullgraph: ember internal error at CALL: ValueError: not enough values to unpack (expected 2, got 1)'),
    # 1
    **dict.fromkeys([
        'test_functions::double_star_user_mapping',
    ], 'fullgraph: expected a mapping, got a _Store value'),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_from_mapping_proxy_argument',
    ], 'fullgraph: iteration over a mappingproxy value is not supported'),
    # 1
    **dict.fromkeys([
        'test_list::list_new_ignores_extra_arguments',
    ], 'fullgraph: list.__new__ of PlainListChild, a class capture does not model'),
    # 1
    **dict.fromkeys([
        'test_dicts::mapping_proxy_of_global_dict_sees_writes',
    ], 'fullgraph: mappingproxy() makes a new mutable object at each call'),
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
        'test_unspec::python_random_drawn_on_every_call',
    ], 'fullgraph: random.Random.uniform is in the standard library (called, not traced)'),
    # 1
    **dict.fromkeys([
        'test_functions::lru_cache_wrapped_function_inlines',
    ], 'fullgraph: test_functions_behaviours._cached_sin (functools.lru_cache) called with tensors or unhashable arguments'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::contextmanager_sets_default_dtype',
    ], "fullgraph: torch._C._set_default_dtype changes torch's global state"),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::sdpa_kernel_context',
    ], "fullgraph: torch._C._set_sdp_use_cudnn changes torch's global state"),
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
        'test_list::tuple_new_of_grandchild_class',
    ], 'fullgraph: tuple.__new__ of PlainTupleChild'),
    # 1
    **dict.fromkeys([
        'test_list::tuple_new_with_keyword_raises',
    ], 'fullgraph: tuple.__new__ with other than a tuple class and one iterable'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::iterate_ndarray_rows',
    ], 'graphs: ember 0, torch.compile 1 (break: iteration over a ndarray value is not supported)'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::grad_context_returned_through_break',
    ], 'graphs: ember 0, torch.compile 1 (runs eagerly: print() is a side effect outside PyTorch (graph break))'),
    # 1
    **dict.fromkeys([
        'test_dicts::ordered_dict_and_module_dict_updated',
    ], 'graphs: ember 0, torch.compile 2 (break: constructing Linear (a module with parameters) inside captured code)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::list_comprehension_in_non_recursive_disabled_function',
    ], 'graphs: ember 0, torch.compile 2 (break: hasattr on a FunctionVar)'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::return_class_manager_made_before_break',
    ], 'graphs: ember 0, torch.compile 2 (break: print() is a side effect outside PyTorch (graph break))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::generator_manager_breaking_in_enter',
    ], 'graphs: ember 1, torch.compile 0 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::profiler_object_used_after_block',
    ], 'graphs: ember 1, torch.compile 0 (break: call to torch.profiler.profiler.profile is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::contextmanager_not_traced_when_disabled',
    ], 'graphs: ember 1, torch.compile 2'),
    # 1
    **dict.fromkeys([
        'test_unspec::python_random_sizes_new_tensor',
    ], 'graphs: ember 1, torch.compile 2 (break: random.Random.randrange is in the standard library (called, not traced))'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::repr_of_structseq_breaks',
    ], 'graphs: ember 1, torch.compile 2 (break: repr called with tensors or captured containers)'),
    # 1
    **dict.fromkeys([
        'test_sets::iterate_set_of_tensors_argument',
    ], 'graphs: ember 2, torch.compile 0 (break: iteration over a constant holding tensors)'),
    # 1
    **dict.fromkeys([
        'test_functions::zip_strict_unequal_lengths_raises',
    ], 'graphs: ember 2, torch.compile 0 (break: zip(strict=True) over sequences of different lengths)'),
    # 1
    **dict.fromkeys([
        'test_dicts::unread_keys_do_not_guard',
    ], 'graphs: ember 2, torch.compile 1'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::tensor_to_builtin_types',
    ], 'graphs: ember 2, torch.compile 1 (break: a type cannot be baked into a graph as a constant)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::unpack_and_index_namedtuple_argument',
    ], 'graphs: ember 2, torch.compile 1 (break: len() of a ContainerMethod)'),
    # 1
    **dict.fromkeys([
        'test_unspec::python_random_scales_new_tensor',
    ], 'graphs: ember 2, torch.compile 1 (break: torch.random.manual_seed is marked disabled (torch.compiler.disable / ember.disable))'),
    # 1
    **dict.fromkeys([
        'test_unspec::python_random_in_while_condition',
    ], 'graphs: ember 2, torch.compile 3 (break: random.Random.randrange is in the standard library (called, not traced))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::break_in_contextmanager_then_inlined_body',
    ], 'graphs: ember 3, torch.compile 1 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::contextlib_stderr_block',
    ], "graphs: ember 3, torch.compile 1 (break: assignment to attribute 'stderr' of a ConstVar)"),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::contextlib_stdout_block',
    ], "graphs: ember 3, torch.compile 1 (break: assignment to attribute 'stdout' of a ConstVar)"),
    # 1
    **dict.fromkeys([
        'test_dicts::global_dict_membership_guarded',
    ], 'graphs: ember 3, torch.compile 2'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::autograd_profiler_contexts_with_break_inside',
    ], 'graphs: ember 3, torch.compile 2 (break: call to torch.autograd.profiler.profile is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::profiler_contexts_with_break_inside',
    ], 'graphs: ember 3, torch.compile 2 (break: call to torch.profiler.profiler.profile is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::breaking_contextmanager_inside_helper',
    ], 'graphs: ember 3, torch.compile 2 (break: print() is a side effect outside PyTorch (graph break))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::generator_manager_with_break_inside',
    ], 'graphs: ember 4, torch.compile 0 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 1
    **dict.fromkeys([
        'test_unspec::numpy_int_arguments_share_a_graph',
    ], 'graphs: ember 4, torch.compile 1'),
    # 1
    **dict.fromkeys([
        'test_functions::unread_entries_do_not_recompile',
    ], 'graphs: ember 4, torch.compile 2'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::autocast_method_with_break',
    ], 'graphs: ember 4, torch.compile 3 (break: print() is a side effect outside PyTorch (graph break))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::sdpa_kernel_context_with_break_inside',
    ], "graphs: ember 4, torch.compile 3 (break: torch._C._set_sdp_use_cudnn changes torch's global state)"),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::nested_generator_managers_with_break',
    ], 'graphs: ember 5, torch.compile 0 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::nested_class_managers_with_break',
    ], 'graphs: ember 5, torch.compile 6 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::nested_autocast_enabled_false_with_breaks',
    ], 'graphs: ember 8, torch.compile 7 (break: print() is a side effect outside PyTorch (graph break))'),
}
