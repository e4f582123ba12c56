"""The longest tests, left out of CI's run to keep it under 30 minutes on 2 cores (``make test``
passes ``-m "not long"``); ``make test-all`` runs them too, as the GPU sessions and reviews do.

Each is a heavier repeat of something CI still covers: another model of a family CI runs, another
kind of damage of a cache CI damages, a second subprocess round. Chosen by measured time (the
longest of a full run on the 2-core machine), not by whether they pass: every one passes.
"""
from __future__ import annotations

LONG: tuple[str, ...] = (
    # inductor: real models (CI keeps bert's gradients, the zoo, the corpus on the inductor)
    "tests/inductor/test_models.py::test_model_inference_and_training[resnet18]",
    "tests/inductor/test_models.py::test_model_inference_and_training[gpt]",
    "tests/inductor/test_real_model_grads.py::test_training_step_gradients_match_eager[bart]",
    "tests/inductor/test_real_model_grads.py::test_training_step_gradients_match_eager[mobilebert]",
    "tests/inductor/test_real_model_grads.py::test_training_step_gradients_match_eager[mobilebert_hidden_states]",
    "tests/inductor/test_real_model_grads.py::test_training_step_gradients_match_eager[bert_hidden_states]",
    "tests/inductor/test_real_model_grads.py::test_training_step_gradients_match_eager[vit]",
    # caches in a second process and damaged (CI keeps one round of each kind of fault)
    "tests/inductor/test_plan_cache.py::test_second_process_loads_compiled_plans",
    "tests/inductor/test_cache.py::test_corrupt_entry_is_rebuilt",
    "tests/inductor/test_cache_damage.py::test_entries_damaged_in_place_are_rebuilt[unreadable]",
    "tests/inductor/test_cache_damage.py::test_entries_damaged_in_place_are_rebuilt[emptied]",
    "tests/inductor/test_cache_damage.py::test_entries_overwritten_with_random_bytes_are_rebuilt",
    "tests/inductor/test_cache_damage.py::test_truncated_entries_are_rebuilt",
    "tests/core/test_native_faults.py::test_a_damaged_helper_is_rebuilt_and_costs_only_speed[not_loadable]",
    "tests/core/test_native_faults.py::test_a_damaged_helper_is_rebuilt_and_costs_only_speed[emptied]",
    "tests/core/test_native_faults.py::test_a_damaged_helper_is_rebuilt_and_costs_only_speed[digest_missing]",
    "tests/core/test_native_faults.py::test_a_damaged_helper_is_rebuilt_and_costs_only_speed[unreadable]",
    # the larger shapes of lowerings CI runs smaller
    "tests/inductor/test_pooling.py::test_values_and_indices_match_eager[geometry7]",
    "tests/inductor/test_index_budget.py::test_shufflenet_training_step_compiles_in_bounded_time",
    # TVM and DDP end to end on models (CI keeps their small cases and the corpus on TVM)
    "tests/tvm/test_tvm_end_to_end.py::test_module_end_to_end_sees_parameter_updates",
    "tests/tvm/test_tvm_models.py::test_resnet18_matches_eager",
    "tests/tvm/test_tvm_models.py::test_gpt_matches_eager",
    "tests/distributed/test_ddp_training.py::test_ddp_captures[gpt]",
    # Ctrl-C at many points of a compile inside the test process: a KeyboardInterrupt landing inside
    # torch's own code can leave torch's state broken for the tests after it in that worker (CI
    # keeps the same in child processes: test_interrupts_during_the_first_compile_of_a_process)
    "tests/core/test_interrupts.py::test_interrupts_anywhere_in_a_compile_reach_the_caller[eager]",
    "tests/core/test_interrupts.py::test_interrupts_anywhere_in_a_compile_reach_the_caller[aot_eager]",
    "tests/core/test_interrupts.py::test_interrupts_anywhere_in_a_compile_reach_the_caller[inductor]",
    # memory after reset on the second backend (CI keeps eager's)
    "tests/core/test_reset_memory.py::test_reset_gives_back_what_compiling_new_functions_took[aot_eager]",
)
