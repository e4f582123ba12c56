"""The one table of ported Dynamo behaviours that ember fails today: key ``<torch test file>::<case>``,
value the reason ember gives. Each entry runs as a strict xfail, so a fix shows up as XPASS and the
table only shrinks. Written by ``python -m tests.dynamo_behaviours.refresh``: rerun it after a
capture change rather than editing by hand."""
from __future__ import annotations


EXPECTED: dict[str, str] = {
    # 42
    **dict.fromkeys([
        'test_dicts::cmp_dict_items_vs_user_defined_set_eq',
        'test_dicts::cmp_dict_items_vs_user_defined_set_ge',
        'test_dicts::cmp_dict_items_vs_user_defined_set_gt',
        'test_dicts::cmp_dict_items_vs_user_defined_set_le',
        'test_dicts::cmp_dict_items_vs_user_defined_set_lt',
        'test_dicts::cmp_dict_items_vs_user_defined_set_ne',
        'test_dicts::cmp_dict_keys_vs_user_defined_set_eq',
        'test_dicts::cmp_dict_keys_vs_user_defined_set_ge',
        'test_dicts::cmp_dict_keys_vs_user_defined_set_gt',
        'test_dicts::cmp_dict_keys_vs_user_defined_set_le',
        'test_dicts::cmp_dict_keys_vs_user_defined_set_lt',
        'test_dicts::cmp_dict_keys_vs_user_defined_set_ne',
        'test_dicts::cmp_set_vs_user_defined_set_eq',
        'test_dicts::cmp_set_vs_user_defined_set_ge',
        'test_dicts::cmp_set_vs_user_defined_set_gt',
        'test_dicts::cmp_set_vs_user_defined_set_le',
        'test_dicts::cmp_set_vs_user_defined_set_lt',
        'test_dicts::cmp_set_vs_user_defined_set_ne',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_and',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_iand',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_ior',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_isub',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_ixor',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_or',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_sub',
        'test_dicts::set_binop_dict_items_vs_user_defined_set_xor',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_and',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_iand',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_ior',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_isub',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_ixor',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_or',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_sub',
        'test_dicts::set_binop_dict_keys_vs_user_defined_set_xor',
        'test_dicts::set_binop_set_vs_user_defined_set_and',
        'test_dicts::set_binop_set_vs_user_defined_set_iand',
        'test_dicts::set_binop_set_vs_user_defined_set_ior',
        'test_dicts::set_binop_set_vs_user_defined_set_isub',
        'test_dicts::set_binop_set_vs_user_defined_set_ixor',
        'test_dicts::set_binop_set_vs_user_defined_set_or',
        'test_dicts::set_binop_set_vs_user_defined_set_sub',
        'test_dicts::set_binop_set_vs_user_defined_set_xor',
    ], 'fullgraph: call to test_dicts_behaviours.UserSet is not supported (not a torch op, not Python code to inline)'),
    # 39
    **dict.fromkeys([
        'test_sets::add_ordered_set',
        'test_sets::binop_and_ordered_set',
        'test_sets::binop_or_ordered_set',
        'test_sets::binop_sub_ordered_set',
        'test_sets::binop_xor_ordered_set',
        'test_sets::clear_ordered_set',
        'test_sets::cmp_eq_ordered_set',
        'test_sets::cmp_less_than_ordered_set',
        'test_sets::cmp_ne_ordered_set',
        'test_sets::constructor_iterable_ordered_set',
        'test_sets::contains_ordered_set',
        'test_sets::copy_ordered_set',
        'test_sets::difference_ordered_set',
        'test_sets::difference_update_ordered_set',
        'test_sets::discard_ordered_set',
        'test_sets::equality_ordered_set',
        'test_sets::intersection_ordered_set',
        'test_sets::intersection_update_ordered_set',
        'test_sets::isdisjoint_ordered_set',
        'test_sets::issubset_ordered_set',
        'test_sets::issuperset_ordered_set',
        'test_sets::ordered_set_binop_preserves_type',
        'test_sets::ordered_set_construct_from_generator',
        'test_sets::ordered_set_construct_from_map',
        'test_sets::ordered_set_construct_from_range',
        'test_sets::ordered_set_copy_preserves_type',
        'test_sets::ordered_set_difference_maintains_order',
        'test_sets::ordered_set_intersection_maintains_order',
        'test_sets::ordered_set_maintains_order',
        'test_sets::ordered_set_symmetric_difference_maintains_order',
        'test_sets::ordered_set_union_maintains_order',
        'test_sets::pop_ordered_set',
        'test_sets::remove_discard_unhashable_ordered_set',
        'test_sets::remove_ordered_set',
        'test_sets::symmetric_difference_ordered_set',
        'test_sets::symmetric_difference_update_ordered_set',
        'test_sets::to_frozenset_ordered_set',
        'test_sets::union_ordered_set',
        'test_sets::update_ordered_set',
    ], 'fullgraph: call to torch.utils._ordered_set.OrderedSet is not supported (not a torch op, not Python code to inline)'),
    # 36
    **dict.fromkeys([
        'test_sets::add_set_subclass',
        'test_sets::binop_and_set_subclass',
        'test_sets::binop_or_set_subclass',
        'test_sets::binop_sub_set_subclass',
        'test_sets::binop_xor_set_subclass',
        'test_sets::clear_set_subclass',
        'test_sets::cmp_eq_frozenset',
        'test_sets::cmp_eq_set',
        'test_sets::cmp_eq_set_subclass',
        'test_sets::cmp_less_than_set_subclass',
        'test_sets::cmp_ne_frozenset',
        'test_sets::cmp_ne_set',
        'test_sets::cmp_ne_set_subclass',
        'test_sets::constructor_iterable_set_subclass',
        'test_sets::contains_set_subclass',
        'test_sets::copy_set_subclass',
        'test_sets::difference_set_subclass',
        'test_sets::difference_update_set_subclass',
        'test_sets::discard_set_key_set_subclass',
        'test_sets::discard_set_subclass',
        'test_sets::equality_set_subclass',
        'test_sets::in_frozenset_set_subclass',
        'test_sets::intersection_set_subclass',
        'test_sets::intersection_update_set_subclass',
        'test_sets::isdisjoint_set_subclass',
        'test_sets::issubset_set_subclass',
        'test_sets::issuperset_set_subclass',
        'test_sets::pop_set_subclass',
        'test_sets::remove_discard_unhashable_set_subclass',
        'test_sets::remove_set_key_set_subclass',
        'test_sets::remove_set_subclass',
        'test_sets::symmetric_difference_set_subclass',
        'test_sets::symmetric_difference_update_set_subclass',
        'test_sets::to_frozenset_set_subclass',
        'test_sets::union_set_subclass',
        'test_sets::update_set_subclass',
    ], 'fullgraph: call to test_sets_behaviours.SetSub is not supported (not a torch op, not Python code to inline)'),
    # 30
    **dict.fromkeys([
        '_test_misc_part1::isinstance_of_many_kinds',
        '_test_misc_part2::ndarray_comparison',
        '_test_misc_part2::ndarray_size_plus_array',
        '_test_misc_part2::operator_add_ndarray_ndarray',
        '_test_misc_part2::operator_floordiv_ndarray_ndarray',
        '_test_misc_part2::operator_ge_ndarray_ndarray',
        '_test_misc_part2::operator_gt_ndarray_ndarray',
        '_test_misc_part2::operator_iadd_ndarray_ndarray',
        '_test_misc_part2::operator_ifloordiv_ndarray_ndarray',
        '_test_misc_part2::operator_imod_ndarray_ndarray',
        '_test_misc_part2::operator_imul_ndarray_ndarray',
        '_test_misc_part2::operator_ipow_ndarray_ndarray',
        '_test_misc_part2::operator_isub_ndarray_ndarray',
        '_test_misc_part2::operator_itruediv_ndarray_ndarray',
        '_test_misc_part2::operator_le_ndarray_ndarray',
        '_test_misc_part2::operator_lt_ndarray_ndarray',
        '_test_misc_part2::operator_matmul_ndarray_ndarray',
        '_test_misc_part2::operator_mod_ndarray_ndarray',
        '_test_misc_part2::operator_mul_ndarray_ndarray',
        '_test_misc_part2::operator_pow_ndarray_ndarray',
        '_test_misc_part2::operator_sub_ndarray_ndarray',
        '_test_misc_part2::operator_truediv_ndarray_ndarray',
        '_test_misc_part2::user_class_add_operator',
        'test_functions::dict_keys_view_is_live',
        'test_functions::dict_values_view_is_live',
        'test_functions::is_floating_point_function_forms',
        'test_functions::move_to_meta_device',
        'test_functions::reduce_single_element',
        'test_functions::tensor_new_with_shape',
        'test_functions::tensor_new_with_size',
    ], 'graphs: ember 0, torch.compile 1'),
    # 26
    **dict.fromkeys([
        'test_dicts::binop_ior_dict_subclass',
        'test_dicts::binop_ior_iterable_dict_subclass',
        'test_dicts::binop_or_dict_subclass',
        'test_dicts::bool_dict_subclass',
        'test_dicts::clear_dict_subclass',
        'test_dicts::cmp_eq_dict_subclass',
        'test_dicts::cmp_ne_dict_subclass',
        'test_dicts::copy_dict_subclass',
        'test_dicts::dict___iter___dict_subclass',
        'test_dicts::dict_items_cmp_value_eq_raises_dict_subclass',
        'test_dicts::dict_items_cmp_value_present_absent_dict_subclass',
        'test_dicts::dict_subclass_from_kwargs',
        'test_dicts::dict_subclass_item_rebound',
        'test_dicts::get_dict_subclass',
        'test_dicts::items_contains_dict_subclass',
        'test_dicts::items_dict_subclass',
        'test_dicts::keys_contains_dict_subclass',
        'test_dicts::keys_dict_subclass',
        'test_dicts::pop_dict_subclass',
        'test_dicts::popitem_dict_subclass',
        'test_dicts::return_dict_subclass',
        'test_dicts::setdefault_dict_subclass',
        'test_dicts::type_dict_subclass',
        'test_dicts::update_dict_subclass',
        'test_dicts::values_contains_dict_subclass',
        'test_dicts::values_dict_subclass',
    ], 'fullgraph: call to test_dicts_behaviours.PlainSub is not supported (not a torch op, not Python code to inline)'),
    # 21
    **dict.fromkeys([
        'test_sets::binop_and_frozenset_subclass',
        'test_sets::binop_or_frozenset_subclass',
        'test_sets::binop_sub_frozenset_subclass',
        'test_sets::binop_xor_frozenset_subclass',
        'test_sets::cmp_eq_frozenset_subclass',
        'test_sets::cmp_less_than_frozenset_subclass',
        'test_sets::cmp_ne_frozenset_subclass',
        'test_sets::constructor_iterable_frozenset_subclass',
        'test_sets::contains_frozenset_subclass',
        'test_sets::copy_frozenset_subclass',
        'test_sets::difference_frozenset_subclass',
        'test_sets::equality_frozenset_subclass',
        'test_sets::frozenset_subclass_copy_is_plain_frozenset',
        'test_sets::in_frozenset_frozenset_subclass',
        'test_sets::intersection_frozenset_subclass',
        'test_sets::isdisjoint_frozenset_subclass',
        'test_sets::issubset_frozenset_subclass',
        'test_sets::issuperset_frozenset_subclass',
        'test_sets::symmetric_difference_frozenset_subclass',
        'test_sets::to_frozenset_frozenset_subclass',
        'test_sets::union_frozenset_subclass',
    ], 'fullgraph: call to test_sets_behaviours.FrozenSub is not supported (not a torch op, not Python code to inline)'),
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
    # 10
    **dict.fromkeys([
        '_test_misc_part2::numpy_arange_dtype_float',
        '_test_misc_part2::numpy_arange_dtype_int',
        '_test_misc_part2::numpy_arange_dtype_np_float32',
        '_test_misc_part2::numpy_arange_dtype_np_float64',
        '_test_misc_part2::numpy_arange_dtype_np_int32',
        '_test_misc_part2::numpy_arange_dtype_np_intp',
        '_test_misc_part2::numpy_arange_dtype_np_uint8',
        '_test_misc_part2::numpy_arange_dtype_str_float32',
        '_test_misc_part2::numpy_arange_dtype_str_float64',
        '_test_misc_part2::numpy_arange_dtype_str_int',
    ], 'graphs: ember 0, torch.compile 1 (break: call to numpy.arange is not supported (not a torch op, not Python code to inline))'),
    # 9
    **dict.fromkeys([
        '_test_misc_part2::operator_add_tensor_ndarray',
        '_test_misc_part2::operator_floordiv_tensor_ndarray',
        '_test_misc_part2::operator_matmul_tensor_ndarray',
        '_test_misc_part2::operator_mod_tensor_ndarray',
        '_test_misc_part2::operator_mul_tensor_ndarray',
        '_test_misc_part2::operator_pow_tensor_ndarray',
        '_test_misc_part2::operator_sub_tensor_ndarray',
        '_test_misc_part2::operator_truediv_ndarray_tensor',
        '_test_misc_part2::operator_truediv_tensor_ndarray',
    ], 'graphs: ember 0, torch.compile 1 (break: a ndarray cannot be baked into a graph as a constant)'),
    # 6
    **dict.fromkeys([
        'test_functions::global_defaultdict_closure_factory',
        'test_functions::global_defaultdict_dict_factory',
        'test_functions::global_defaultdict_lambda_factory',
        'test_functions::global_defaultdict_list_factory',
        'test_functions::global_defaultdict_set_factory',
        'test_functions::global_defaultdict_tuple_factory',
    ], 'fullgraph: call to defaultdict.clear is not supported (not a torch op, not Python code to inline)'),
    # 6
    **dict.fromkeys([
        'test_dicts::instance_dict_non_str_keys_read_and_delete',
        'test_dicts::instance_dict_order_after_mixed_writes',
        'test_dicts::instance_dict_pop_missing',
        'test_dicts::instance_dict_pop_then_reinsert_goes_last',
        'test_dicts::instance_dict_pop_with_default',
        'test_dicts::instance_dict_with_non_str_key',
    ], 'fullgraph: reading __dict__ of a Empty built in captured code'),
    # 5
    **dict.fromkeys([
        'test_dicts::cmp_eq_dict',
        'test_dicts::cmp_eq_ordered_dict',
        'test_list::cmp_eq_list',
        'test_list::cmp_eq_tuple',
        'test_sets::equality_set',
    ], 'fullgraph: attribute __eq__ of a container'),
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
        'test_dicts::instance_dunder_dict_items_includes_mutations',
        'test_dicts::instance_dunder_dict_items_iteration',
        'test_dicts::instance_dunder_dict_keys_includes_mutations',
        'test_dicts::instance_dunder_dict_multiple_mutations',
        'test_dicts::instance_dunder_dict_values_includes_mutations',
    ], 'fullgraph: reading __dict__ of a Attrs with stores not yet replayed'),
    # 4
    **dict.fromkeys([
        'test_dicts::cmp_eq_key_raises_dict',
        'test_dicts::cmp_eq_key_raises_dict_subclass',
        'test_dicts::cmp_eq_key_raises_ordered_dict',
        'test_dicts::equal_user_keys_share_an_entry',
    ], 'fullgraph: a dict key needs a Python value, got a UserObjectVar'),
    # 4
    **dict.fromkeys([
        'test_dicts::dict___iter___dict',
        'test_dicts::dict___iter___ordered_dict',
        'test_list::iter_list',
        'test_list::iter_tuple',
    ], 'fullgraph: attribute __iter__ of a container'),
    # 4
    **dict.fromkeys([
        'test_dicts::cmp_ne_dict',
        'test_dicts::cmp_ne_ordered_dict',
        'test_list::cmp_ne_list',
        'test_list::cmp_ne_tuple',
    ], 'fullgraph: attribute __ne__ of a container'),
    # 4
    **dict.fromkeys([
        'test_dicts::fromkeys_ordered_dict',
        'test_dicts::ordered_dict_cmp_eq_order',
        'test_dicts::ordered_dict_move_to_end',
        'test_dicts::ordered_dict_popitem_kwarg',
    ], 'fullgraph: call to OrderedDict.fromkeys is not supported (not a torch op, not Python code to inline)'),
    # 4
    **dict.fromkeys([
        'test_sets::frozenset_from_dict_reuses_hashes',
        'test_sets::frozenset_subclass_from_dict_reuses_hashes',
        'test_sets::set_from_dict_reuses_hashes',
        'test_sets::set_subclass_from_dict_reuses_hashes',
    ], 'fullgraph: call to test_sets_behaviours.HashCounting is not supported (not a torch op, not Python code to inline)'),
    # 4
    **dict.fromkeys([
        'test_dicts::items_contains_dict',
        'test_dicts::items_contains_ordered_dict',
        'test_dicts::items_dict',
        'test_dicts::items_ordered_dict',
    ], 'fullgraph: dict.items on a value the capture does not hold'),
    # 4
    **dict.fromkeys([
        'test_dicts::keys_contains_dict',
        'test_dicts::keys_contains_ordered_dict',
        'test_dicts::keys_dict',
        'test_dicts::keys_ordered_dict',
    ], 'fullgraph: dict.keys on a value the capture does not hold'),
    # 4
    **dict.fromkeys([
        'test_dicts::values_contains_dict',
        'test_dicts::values_contains_ordered_dict',
        'test_dicts::values_dict',
        'test_dicts::values_ordered_dict',
    ], 'fullgraph: dict.values on a value the capture does not hold'),
    # 4
    **dict.fromkeys([
        'test_python_autograd::forward_and_backward_on_tape',
        'test_python_autograd::forward_and_backward_resetting_tape',
        'test_python_autograd::forward_loss_on_tape',
        'test_python_autograd::forward_loss_resetting_tape_inside',
    ], "fullgraph: operator '+' on UserObjectVar and UserObjectVar is not supported"),
    # 3
    **dict.fromkeys([
        'test_exceptions::exception_context_cause_suppress_descriptors',
        'test_exceptions::longer_context_cycle',
        'test_exceptions::self_referencing_context_does_not_hang',
    ], "fullgraph: assignment to attribute '__context__' of a ConstVar"),
    # 3
    **dict.fromkeys([
        'test_list::contains_list',
        'test_list::contains_tuple',
        'test_sets::contains_set',
    ], 'fullgraph: attribute __contains__ of a container'),
    # 3
    **dict.fromkeys([
        'test_dicts::binop_ior_iterable_dict',
        'test_dicts::binop_ior_iterable_ordered_dict',
        'test_dicts::ordered_dict_binop_ior_return_type',
    ], 'fullgraph: attribute __ior__ of a container'),
    # 3
    **dict.fromkeys([
        'test_dicts::instance_dunder_dict_copy_does_not_alias_instance_dict',
        'test_list::setitem___slice_non_iterable_list_method',
        'test_list::setitem_list_method',
    ], 'fullgraph: attribute __setitem__ of a container'),
    # 3
    **dict.fromkeys([
        'test_functions::defaultdict_setdefault_existing',
        'test_functions::defaultdict_setdefault_missing',
        'test_functions::defaultdict_setdefault_missing_none',
    ], 'fullgraph: call to defaultdict.fromkeys is not supported (not a torch op, not Python code to inline)'),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::sdpa_kernel_context',
        'test_dicts::fromkeys_dict',
        'test_functions::fromkeys_of_dict_kinds',
    ], 'fullgraph: call to dict.fromkeys is not supported (not a torch op, not Python code to inline)'),
    # 3
    **dict.fromkeys([
        'test_list::list_new_ignores_extra_arguments',
        'test_list::list_new_of_list_ignores_arguments',
        'test_list::list_new_then_append',
    ], 'fullgraph: call to list.__new__ is not supported (not a torch op, not Python code to inline)'),
    # 3
    **dict.fromkeys([
        '_test_misc_part2::numpy_array_of_ndarrays',
        '_test_misc_part2::numpy_array_of_numpy_scalars',
        'test_unspec::tensor_of_tensors_form_3',
    ], 'fullgraph: call to numpy.array is not supported (not a torch op, not Python code to inline)'),
    # 3
    **dict.fromkeys([
        '_test_misc_part2::numpy_issubdtype_of_python_type',
        'test_functions::numpy_dtype_object_call',
        'test_functions::numpy_iinfo_constant',
    ], 'fullgraph: call to numpy.dtype is not supported (not a torch op, not Python code to inline)'),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::disable_saved_tensors_hooks_decorator',
        'test_ctx_manager::disable_saved_tensors_hooks_inside_disabled',
        'test_ctx_manager::nested_disable_saved_tensors_hooks',
    ], 'fullgraph: calling a UserObjectVar is not supported'),
    # 3
    **dict.fromkeys([
        'test_list::remove_list_method',
        'test_list::remove_matches_identity_before_richcompare_list_method',
        'test_list::remove_uses_item_richcompare_list_method',
    ], 'fullgraph: list.remove is not supported'),
    # 3
    **dict.fromkeys([
        'test_list::sort_empty_during_sort_list_method',
        'test_list::sort_list_method',
        'test_list::sort_user_defined_lt_list_method',
    ], 'fullgraph: list.sort is not supported'),
    # 3
    **dict.fromkeys([
        'test_dicts::defaultdict_without_factory_no_args',
        'test_dicts::defaultdict_without_factory_none',
        'test_dicts::defaultdict_without_factory_none_with_items',
    ], 'fullgraph: returning a ContainerMethod from compiled code is not supported yet'),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::grad_context_returned_through_break',
        'test_functions::partial_of_local_lambda_across_break',
        'test_functions::partials_mixed_kinds_across_break',
    ], 'graphs: ember 0, torch.compile 1 (runs eagerly: print() is a side effect outside PyTorch (graph break))'),
    # 3
    **dict.fromkeys([
        '_test_misc_part2::ndarray_live_across_a_break',
        '_test_misc_part2::ones_like_of_ndarrays_across_break',
        '_test_misc_part2::two_ndarrays_across_a_break',
    ], "graphs: ember 0, torch.compile 2 (break: Tensor.numpy() needs the tensor's data (graph break))"),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::grad_context_made_before_break',
        'test_ctx_manager::grad_context_on_stack_during_break',
        'test_functions::partials_live_across_a_break',
    ], 'graphs: ember 0, torch.compile 2 (runs eagerly: print() is a side effect outside PyTorch (graph break))'),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::class_manager_breaking_in_enter',
        'test_ctx_manager::return_class_manager_made_before_break',
        'test_unspec::size_kept_across_break',
    ], 'graphs: ember 1, torch.compile 2 (break: print() is a side effect outside PyTorch (graph break))'),
    # 3
    **dict.fromkeys([
        'test_dicts::global_dict_membership_guarded',
        'test_dicts::module_keyed_dict_order_recompiles',
        'test_dicts::tensor_keyed_dict_order_recompiles',
    ], 'graphs: ember 3, torch.compile 2'),
    # 3
    **dict.fromkeys([
        'test_ctx_manager::breaking_contextmanager_inside_helper',
        'test_ctx_manager::inlined_no_grad_function_with_break',
        'test_ctx_manager::nested_grad_modes_with_breaks',
    ], 'graphs: ember 3, torch.compile 2 (break: print() is a side effect outside PyTorch (graph break))'),
    # 2
    **dict.fromkeys([
        'test_functions::defaultdict_made_inside_updates',
        'test_functions::dict_with_parameter_key',
    ], 'fullgraph: a dict key needs a Python value, got a tensor'),
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
        'test_list::binop_add_list',
        'test_list::binop_add_tuple',
    ], 'fullgraph: attribute __add__ of a container'),
    # 2
    **dict.fromkeys([
        'test_list::getitem_list',
        'test_list::getitem_tuple',
    ], 'fullgraph: attribute __getitem__ of a container'),
    # 2
    **dict.fromkeys([
        'test_list::binop_iadd_list_method',
        'test_list::global_list_inplace_concat',
    ], 'fullgraph: attribute __iadd__ of a container'),
    # 2
    **dict.fromkeys([
        'test_list::binop_imul_list_method',
        'test_list::global_list_inplace_repeat',
    ], 'fullgraph: attribute __imul__ of a container'),
    # 2
    **dict.fromkeys([
        'test_list::cmp_less_than_list',
        'test_list::cmp_less_than_tuple',
    ], 'fullgraph: attribute __lt__ of a container'),
    # 2
    **dict.fromkeys([
        'test_list::binop_imul_list',
        'test_list::binop_imul_tuple',
    ], 'fullgraph: attribute __mul__ of a container'),
    # 2
    **dict.fromkeys([
        'test_dicts::binop_or_dict',
        'test_dicts::binop_or_ordered_dict',
    ], 'fullgraph: attribute __or__ of a container'),
    # 2
    **dict.fromkeys([
        'test_list::sort_cmp_to_key_list_method',
        'test_list::sort_modified_during_sort_list_method',
    ], 'fullgraph: call to _functools.cmp_to_key is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::binop_ior_dict',
        'test_dicts::defaultdict_inplace_union_keeps_factory',
    ], 'fullgraph: call to dict.__ior__ is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_new_of_dict',
        'test_dicts::dict_new_of_subclass',
    ], 'fullgraph: call to dict.__new__ is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::pop_dict',
        'test_dicts::pop_ordered_dict',
    ], 'fullgraph: call to dict.pop is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::popitem_dict',
        'test_dicts::popitem_ordered_dict',
    ], 'fullgraph: call to dict.popitem is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::setdefault_dict',
        'test_dicts::setdefault_ordered_dict',
    ], 'fullgraph: call to dict.setdefault is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_functions::namedtuple_made_inside',
        'test_functions::namedtuple_with_defaults',
    ], 'fullgraph: call to sys.intern is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_subclass_with_new_and_init',
        'test_dicts::ordereddict_subclass_with_new_and_init',
    ], 'fullgraph: call to test_dicts_behaviours._custom_init_dict.<locals>.Custom is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_sets::set_subclass_extra_method',
        'test_sets::set_subclass_overriding_add',
    ], 'fullgraph: call to test_sets_behaviours.AddsOne is not supported (not a torch op, not Python code to inline)'),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_items_cmp_value_eq_raises_dict',
        'test_dicts::dict_items_cmp_value_eq_raises_ordered_dict',
    ], "fullgraph: comparison '==' between DictViewVar and DictViewVar is not supported"),
    # 2
    **dict.fromkeys([
        'test_dicts::copy_dict',
        'test_dicts::copy_ordered_dict',
    ], 'fullgraph: dict.copy on a value the capture does not hold'),
    # 2
    **dict.fromkeys([
        'test_dicts::get_dict',
        'test_dicts::get_ordered_dict',
    ], 'fullgraph: dict.get on a value the capture does not hold'),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_subclass_argument_mutated',
        'test_dicts::global_dict_subclass_read_methods',
    ], 'fullgraph: dict.values of a dict whose keys cannot be guarded'),
    # 2
    **dict.fromkeys([
        'test_list::append_list_method',
        'test_list::insert_list_method',
    ], 'fullgraph: ember internal error at CALL_FUNCTION_EX: IndexError: list index out of range'),
    # 2
    **dict.fromkeys([
        'test_dicts::dict_update_with_triple_raises',
        'test_functions::dict_update_forms',
    ], 'fullgraph: expected a mapping, got a ListVar'),
    # 2
    **dict.fromkeys([
        'test_list::index_miss_message_deque_nonconst',
        'test_list::index_miss_message_list_nonconst',
    ], 'fullgraph: list.index over tensors'),
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
        'test_dicts::dict_union_disjoint_keys',
        'test_dicts::dict_union_overlapping_keys',
    ], "fullgraph: operator '|' on DictVar and DictVar is not supported"),
    # 2
    **dict.fromkeys([
        'test_dicts::len_of_instance_dict_after_del',
        'test_dicts::membership_in_instance_dict',
    ], 'fullgraph: reading __dict__ of a DictProbe with stores not yet replayed'),
    # 2
    **dict.fromkeys([
        'test_functions::str_of_object_default_repr_class_part',
        'test_functions::str_of_object_with_dunder_str',
    ], 'fullgraph: str called with tensors or captured containers'),
    # 2
    **dict.fromkeys([
        '_test_misc_part2::numpy_force_false',
        '_test_misc_part2::numpy_force_true_on_requires_grad',
    ], "graphs: ember 0, torch.compile 1 (break: Tensor.numpy() needs the tensor's data (graph break))"),
    # 2
    **dict.fromkeys([
        '_test_misc_part2::numpy_int_argument_modulo',
        'test_dicts::unread_keys_do_not_guard',
    ], 'graphs: ember 2, torch.compile 1'),
    # 2
    **dict.fromkeys([
        'test_ctx_manager::break_inside_contextmanager_setup',
        'test_ctx_manager::break_inside_contextmanager_with_side_effects',
    ], 'graphs: ember 3, torch.compile 0 (break: a with-block whose body breaks the graph: its context is entered in Python at a graph break)'),
    # 2
    **dict.fromkeys([
        '_test_misc_part2::getattr_default_guards_attribute_presence',
        'test_sets::isdisjoint_stops_consuming_generator',
    ], 'wrong: out: Tensor-likes are not close!'),
    # 2
    **dict.fromkeys([
        'test_functions::vmapped_inplace_on_clone_identity',
        'test_functions::vmapped_inplace_two_args_identity',
    ], 'wrong: out[0]: False != True'),
    # 2
    **dict.fromkeys([
        '_test_misc_part2::data_descriptor_set',
        'test_dicts::dict_update_with_two_positionals_raises',
    ], 'wrong: out[0]: Tensor-likes are not close!'),
    # 2
    **dict.fromkeys([
        'test_list::copy_list_method',
        'test_list::reverse_list_method',
    ], "wrong: out[1][2]: 'ok' != 'TypeError'"),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::attribute_added_to_namedtuple_subclass_made_inside',
    ], "AttributeError: 'PairPlus' object has no attribute 'extra'"),
    # 1
    **dict.fromkeys([
        'test_functions::rebinding_partial_used_by_closure_across_break',
    ], "AttributeError: 'Unsupported' object has no attribute 'guards'"),
    # 1
    **dict.fromkeys([
        'test_dicts::write_through_instance_dict',
    ], "fullgraph: DictProbe object has no attribute 'w'"),
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
        '_test_misc_part2::data_of_inference_tensor',
    ], 'fullgraph: Tensor.data is not supported in captured code'),
    # 1
    **dict.fromkeys([
        'test_functions::fsdp_storage_size_helper',
    ], 'fullgraph: Tensor.untyped_storage is not supported in captured code'),
    # 1
    **dict.fromkeys([
        'test_dicts::write_through_module_instance_dict',
    ], "fullgraph: WritesDict object has no attribute 'w'"),
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
    ], 'fullgraph: a dict key needs a Python value, got a ObjectVar'),
    # 1
    **dict.fromkeys([
        'test_dicts::partial_as_dict_key',
    ], 'fullgraph: a dict key needs a Python value, got a PartialVar'),
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
        '_test_misc_part2::property_setter_on_mapping_subclass',
    ], "fullgraph: assignment to property 'level'"),
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
        'test_sets::length_hint_of_set_and_dict_iterators',
    ], "fullgraph: attribute '__length_hint__' of a IteratorVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_python_autograd::forward_of_node_arguments',
    ], "fullgraph: attribute 'value' is a tensor of an object with no source"),
    # 1
    **dict.fromkeys([
        'test_dicts::defaultdict_copies_keep_factory',
    ], 'fullgraph: attribute __copy__ of a container'),
    # 1
    **dict.fromkeys([
        'test_list::delitem_list_method',
    ], 'fullgraph: attribute __delitem__ of a container'),
    # 1
    **dict.fromkeys([
        'test_dicts::fromkeys_dict_subclass',
    ], 'fullgraph: call to PlainSub.fromkeys is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::checkpoint_valid_flag',
    ], 'fullgraph: call to _EngineBase.is_checkpoint_valid is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::clear_dict',
    ], 'fullgraph: call to dict.clear is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::update_dict',
    ], 'fullgraph: call to dict.update is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_and_frozenset',
    ], 'fullgraph: call to frozenset.__and__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::equality_frozenset',
    ], 'fullgraph: call to frozenset.__eq__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::cmp_less_than_frozenset',
    ], 'fullgraph: call to frozenset.__lt__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_or_frozenset',
    ], 'fullgraph: call to frozenset.__or__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_sub_frozenset',
    ], 'fullgraph: call to frozenset.__sub__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_xor_frozenset',
    ], 'fullgraph: call to frozenset.__xor__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::difference_frozenset',
    ], 'fullgraph: call to frozenset.difference is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::intersection_frozenset',
    ], 'fullgraph: call to frozenset.intersection is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::isdisjoint_frozenset',
    ], 'fullgraph: call to frozenset.isdisjoint is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::issubset_frozenset',
    ], 'fullgraph: call to frozenset.issubset is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::issuperset_frozenset',
    ], 'fullgraph: call to frozenset.issuperset is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::symmetric_difference_frozenset',
    ], 'fullgraph: call to frozenset.symmetric_difference is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::union_frozenset',
    ], 'fullgraph: call to frozenset.union is not supported (not a torch op, not Python code to inline)'),
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
        '_test_misc_part2::len_of_ndarray_argument',
    ], 'fullgraph: call to ndarray.sum is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::ndarray_tolist',
    ], 'fullgraph: call to ndarray.tolist is not supported (not a torch op, not Python code to inline)'),
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
        '_test_misc_part2::next_of_range_iterator',
    ], 'fullgraph: call to range.__iter__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_and_set',
    ], 'fullgraph: call to set.__and__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::cmp_less_than_set',
    ], 'fullgraph: call to set.__lt__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_or_set',
    ], 'fullgraph: call to set.__or__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_sub_set',
    ], 'fullgraph: call to set.__sub__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::binop_xor_set',
    ], 'fullgraph: call to set.__xor__ is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::add_set',
    ], 'fullgraph: call to set.add is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::clear_set',
    ], 'fullgraph: call to set.clear is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::difference_set',
    ], 'fullgraph: call to set.difference is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::difference_update_set',
    ], 'fullgraph: call to set.difference_update is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::discard_set',
    ], 'fullgraph: call to set.discard is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::intersection_set',
    ], 'fullgraph: call to set.intersection is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::intersection_update_set',
    ], 'fullgraph: call to set.intersection_update is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::isdisjoint_set',
    ], 'fullgraph: call to set.isdisjoint is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::issubset_set',
    ], 'fullgraph: call to set.issubset is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::issuperset_set',
    ], 'fullgraph: call to set.issuperset is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::pop_set',
    ], 'fullgraph: call to set.pop is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::remove_set',
    ], 'fullgraph: call to set.remove is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::symmetric_difference_set',
    ], 'fullgraph: call to set.symmetric_difference is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::symmetric_difference_update_set',
    ], 'fullgraph: call to set.symmetric_difference_update is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::union_set',
    ], 'fullgraph: call to set.union is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_sets::update_set',
    ], 'fullgraph: call to set.update is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_subclass_custom_setitem',
    ], 'fullgraph: call to test_dicts_behaviours.BumpOnSet is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::ordered_dict_subclass_overriding_move_to_end',
    ], 'fullgraph: call to test_dicts_behaviours.ODOverloads is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_subclass_extra_method_inlined',
    ], 'fullgraph: call to test_dicts_behaviours.WithMethod is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_exceptions::custom_exception_with_init_args',
    ], 'fullgraph: call to test_exceptions_behaviours.CustomWithArgs is not supported (not a torch op, not Python code to inline)'),
    # 1
    **dict.fromkeys([
        'test_functions::ordered_dict_subclass_from_kwargs',
    ], 'fullgraph: call to test_functions_behaviours.OrderedSub is not supported (not a torch op, not Python code to inline)'),
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
        'test_functions::instance_equality_default',
    ], "fullgraph: comparison '==' between UserObjectVar and UserObjectVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_functions::dict_of_user_mutable_mapping',
    ], 'fullgraph: ember internal error at CALL: ValueError: not enough values to unpack (expected 2, got 1)'),
    # 1
    **dict.fromkeys([
        'test_list::index_miss_message_tuple',
    ], 'fullgraph: ember internal error at CALL: ValueError: tuple.index(x): x not in tuple'),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_update_from_object_with_keys_and_getitem',
    ], 'fullgraph: expected a mapping, got a UserObjectVar'),
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
        'test_dicts::dict_subclass_overriding_getitem',
    ], 'fullgraph: item assignment on a CountingGets value is not supported'),
    # 1
    **dict.fromkeys([
        'test_dicts::return_user_dict',
    ], 'fullgraph: item assignment on a UserObjectVar is not supported'),
    # 1
    **dict.fromkeys([
        'test_list::extend_list_method',
    ], 'fullgraph: iteration over a int value is not supported'),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_from_mapping_proxy_argument',
    ], 'fullgraph: iteration over a mappingproxy value is not supported'),
    # 1
    **dict.fromkeys([
        'test_functions::deque_edits',
    ], 'fullgraph: list.popleft is not supported'),
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
        'test_python_autograd::backward_of_loss_built_eagerly',
    ], "fullgraph: operator '*' on UserObjectVar and Node value is not supported"),
    # 1
    **dict.fromkeys([
        'test_functions::list_repeat_left',
    ], "fullgraph: operator '*' on int value and ListVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_inplace_union',
    ], "fullgraph: operator '|=' on DictVar and DictVar is not supported"),
    # 1
    **dict.fromkeys([
        'test_unspec::python_random_drawn_on_every_call',
    ], 'fullgraph: random.Random.uniform is in the standard library (called, not traced)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::descriptor_then_direct_dict_write',
    ], 'fullgraph: reading __dict__ of a HasPrefixing with stores not yet replayed'),
    # 1
    **dict.fromkeys([
        'test_dicts::state_dict_from_instance_dict_after_writes',
    ], 'fullgraph: reading __dict__ of a Scheduler with stores not yet replayed'),
    # 1
    **dict.fromkeys([
        'test_sets::copy_set',
    ], 'fullgraph: set.copy on a value the capture does not hold'),
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
        'test_ctx_manager::contextmanager_sets_default_dtype',
    ], "fullgraph: torch._C._set_default_dtype changes torch's global state"),
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
        'test_list::index_miss_message_tuple_nonconst',
    ], 'fullgraph: tuple.index over tensors'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::ndarray_astype_builtin_types',
    ], 'graphs: ember 0, torch.compile 1 (break: call to ndarray.astype is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::numpy_unique_float16',
    ], 'graphs: ember 0, torch.compile 1 (break: call to numpy.asarray is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::numpy_where_with_int_argument',
    ], 'graphs: ember 0, torch.compile 1 (break: call to numpy.where is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::iterate_ndarray_rows',
    ], 'graphs: ember 0, torch.compile 1 (break: iteration over a ndarray value is not supported)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::numpy_arange_after_a_break',
    ], 'graphs: ember 0, torch.compile 1 (break: print() is a side effect outside PyTorch (graph break))'),
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
        '_test_misc_part2::ndarray_argument_across_a_break',
    ], 'graphs: ember 0, torch.compile 2 (break: print() is a side effect outside PyTorch (graph break))'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::numpy_take_along_axis',
    ], 'graphs: ember 0, torch.compile 3 (break: call to numpy.take_along_axis is not supported (not a torch op, not Python code to inline))'),
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
        'test_dicts::dict_or_list_raises',
    ], "graphs: ember 1, torch.compile 0 (break: operator '|' on DictVar and ListVar is not supported)"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_or_tuple_raises',
    ], "graphs: ember 1, torch.compile 0 (break: operator '|' on DictVar and TupleVar is not supported)"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_or_float_raises',
    ], "graphs: ember 1, torch.compile 0 (break: operator '|' on DictVar and float value is not supported)"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_or_int_raises',
    ], "graphs: ember 1, torch.compile 0 (break: operator '|' on DictVar and int value is not supported)"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_or_str_raises',
    ], "graphs: ember 1, torch.compile 0 (break: operator '|' on DictVar and str value is not supported)"),
    # 1
    **dict.fromkeys([
        'test_functions::zip_strict_unequal_lengths_raises',
    ], 'graphs: ember 1, torch.compile 0 (break: zip(strict=True) over sequences of different lengths)'),
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
        '_test_misc_part2::tensor_to_builtin_types',
    ], 'graphs: ember 2, torch.compile 1 (break: a type cannot be baked into a graph as a constant)'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::unpack_and_index_namedtuple_argument',
    ], 'graphs: ember 2, torch.compile 1 (break: hasattr on a TupleVar)'),
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
        'test_ctx_manager::autograd_profiler_contexts_with_break_inside',
    ], 'graphs: ember 3, torch.compile 2 (break: call to torch.autograd.profiler.profile is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::profiler_contexts_with_break_inside',
    ], 'graphs: ember 3, torch.compile 2 (break: call to torch.profiler.profiler.profile is not supported (not a torch op, not Python code to inline))'),
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
        'test_ctx_manager::sdpa_kernel_context_with_break_inside',
    ], 'graphs: ember 4, torch.compile 3 (break: call to dict.fromkeys is not supported (not a torch op, not Python code to inline))'),
    # 1
    **dict.fromkeys([
        'test_ctx_manager::autocast_method_with_break',
    ], 'graphs: ember 4, torch.compile 3 (break: print() is a side effect outside PyTorch (graph break))'),
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
    # 1
    **dict.fromkeys([
        'test_dicts::dict_arguments_inplace_union_guarded',
    ], 'wrong: arguments after the call[0][2]: keys [1, 5] != [1, 5, 3]'),
    # 1
    **dict.fromkeys([
        'test_functions::vmapped_inplace_identity',
    ], 'wrong: out: False != True'),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::ndarray_into_torch_tensor',
    ], "wrong: out: The values for attribute 'dtype' do not match: torch.float64 != torch.float32."),
    # 1
    **dict.fromkeys([
        '_test_misc_part2::operator_add_follows_contents_of_same_ndarray',
    ], "wrong: out['values']: Tensor-likes are not close!"),
    # 1
    **dict.fromkeys([
        'test_dicts::dict_union_result_types',
    ], "wrong: out[0]: 'dict' != 'defaultdict'"),
    # 1
    **dict.fromkeys([
        'test_functions::dataclass_default_factories',
    ], "wrong: out[0]['tensors']['t']: Tensor-likes are not close!"),
    # 1
    **dict.fromkeys([
        'test_list::index_miss_message_deque',
    ], 'wrong: out[1]: "\'z\' is not in list" != "\'z\' is not in deque"'),
    # 1
    **dict.fromkeys([
        'test_dicts::repr_of_ordered_dict',
    ], 'wrong: out[1]: "{\'a\': 1, \'b\': 2}" != "OrderedDict([(\'a\', 1), (\'b\', 2)])"'),
    # 1
    **dict.fromkeys([
        'test_dicts::ordered_dict_binop_or_return_type',
    ], "wrong: out[1][0]: 'dict' != 'OrderedDict'"),
    # 1
    **dict.fromkeys([
        'test_list::clear_list_method',
    ], "wrong: out[1][3]: 'ok' != 'TypeError'"),
    # 1
    **dict.fromkeys([
        'test_exceptions::reraise_outer_exception_reorders_chain',
    ], 'wrong: out[4]: False != True'),
}
