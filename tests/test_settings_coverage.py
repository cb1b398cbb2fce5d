"""Every documented setting has a test that changes it from its default and checks what it does.

The settings are read from the code, not listed here by hand: `llm train`'s (llm/settings_help.py, from the
TrainConfig dataclasses), the Ray actors' (llm/member_options.py DistributedConfig), a reproduction's budget
(paper_checks/reproduce/budgets.py Budget), `llm curve`'s flags (llm/curve.py) and `simulate run`'s (simulate/cli.py).
SETTING_TESTS maps each to the tests that change it and assert its effect (a record, a number computed
independently, the unit the setting feeds), not only that the run finishes; INTERACTIONS names the cases of
settings that act together. A new setting without an entry fails here, and so does an entry naming a test
that does not exist or a setting that no longer does.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
from functools import lru_cache
from pathlib import Path

import pytest

from escov.llm import curve
from escov.llm.member_options import DistributedConfig
from escov.llm.settings_help import settings as train_settings
from escov.paper_checks.reproduce.budgets import Budget
from escov.simulate.cli import build_parser as simulate_parser

ROOT = Path(__file__).resolve().parents[1]

RUN = "tests/llm/test_run_settings.py::"
EVAL = RUN + "test_evaluation_settings_shape_the_evaluations"
PROBE = RUN + "test_probe_settings_shape_the_probe"
RUNDIR = RUN + "test_checkpoint_and_kept_completion_settings_shape_the_run_directory"
COUNTED = RUN + "test_each_es_step_scores_the_members_and_step_samples_center_completions"
BF16_DRIFT = RUN + "test_a_bf16_run_measures_its_drift_from_the_base_as_its_own_weights_hold_it"
VLLM_RUN = RUN + "test_engine_vllm_starts_the_run_on_vllm_with_its_share_of_gpu_memory"  # slow: vLLM's start
ES_ENGINE = "tests/llm/es/test_algorithm.py::"
ES_NOISE = "tests/llm/es/test_noise.py::"
GRPO_ENGINE = "tests/llm/test_grpo_engine.py::"
VARIANTS = "tests/llm/test_grpo_variants.py::"
PARITY = "tests/llm/test_grpo_trl_parity.py::"
BATCHED = "tests/llm/es/test_batched_hf.py::"
RAY = "tests/llm/es/test_ray_actors.py::"
CURVE = "tests/llm/test_curve.py::"
TRACKING = "tests/llm/test_tracking.py::"
BUDGET = "tests/paper_checks/reproduce/test_budgets.py::"
ARMS = "tests/paper_checks/reproduce/test_answer_arms.py::"
LORA = VARIANTS + "test_lora_step_trains_only_the_adapters"
COVERAGE = "tests/llm/test_grpo_coverage_variants.py::"
VARIANT_RUNS = "tests/llm/test_grpo_variant_runs.py::"
VARIANT_STATE = VARIANT_RUNS + "test_the_variants_state_survives_a_checkpoint_of_the_optimizer"
CURVE_REUSE = CURVE + "test_a_curve_reuses_a_point_only_at_its_own_temperature_and_sample_count"
STRATEGY = "tests/llm/test_member_options.py::test_the_strategy_follows_workers_address_and_batched_together"
FIT_PROBE = "tests/llm/test_problem_sets_fit.py::test_the_probes_prompts_are_fitted_only_when_the_probe_runs"
FIT_PROBE_GIVEN = (
    "tests/llm/test_problem_sets_fit.py::test_a_probe_count_given_explicitly_is_refused_only_when_the_probe_runs"
)

SETTING_TESTS: dict[str, tuple[str, ...]] = {
    # ---- llm train: the run
    "algo": (
        "tests/llm/test_train_config.py::test_flop_match_with_n_equal_4g_gives_equal_steps",
        "tests/llm/test_resume_point.py::test_a_schedule_stopped_at_its_switch_resumes_there",
    ),
    "model": (CURVE + "test_curve_of_a_real_run",),
    "task": (CURVE + "test_curve_of_a_real_run",),
    "data": (
        "tests/llm/tasks/test_data_files.py::test_train_config_passes_data_settings_to_the_task",
        CURVE + "test_curve_of_a_run_trained_on_a_data_file_evaluates_the_runs_own_test_records",
    ),
    "test_data": ("tests/llm/tasks/test_data_files.py::test_train_config_passes_data_settings_to_the_task", FIT_PROBE),
    "data_split": (
        "tests/llm/tasks/test_data_files.py::test_split_rules",
        CURVE + "test_curve_of_a_run_trained_on_a_data_file_evaluates_the_runs_own_test_records",
    ),
    "data_fields": (
        "tests/llm/tasks/test_data_files.py::test_field_mapping_reads_other_column_names",
        "tests/llm/tasks/test_data_files.py::test_train_config_passes_data_settings_to_the_task",
    ),
    "prompt_style": (
        "tests/llm/tasks/test_countdown.py::test_prompts_of_each_style_hold_the_numbers_and_target",
        "tests/llm/tasks/test_data_files.py::test_train_config_passes_data_settings_to_the_task",
    ),
    "reward": (
        "tests/llm/tasks/test_countdown.py::test_a_tasks_score_is_the_reward_under_its_own_settings",
        "tests/llm/tasks/test_rewards.py::test_es_at_scale_countdown_reward",
    ),
    "format_reward": ("tests/llm/tasks/test_countdown.py::test_format_reward_only_for_wellformed_wrong_answers",),
    "reward_function": (
        "tests/llm/tasks/test_own_data.py::test_a_reward_function_gets_trl_arguments_and_its_rewards_are_the_tasks",
        TRACKING + "test_every_step_metric_is_a_tensorboard_scalar_at_its_step",
    ),
    "reward_weights": (
        "tests/llm/tasks/test_reward_function.py::test_two_weighted_functions_none_entries_and_numpy_arrays_give_trls_total",
    ),
    "correct_reward": (
        "tests/llm/tasks/test_correctness.py::test_a_format_reward_beside_accuracy_leaves_correct_to_accuracy",
        "tests/llm/tasks/test_correctness.py::test_a_builtin_task_with_reward_functions_is_graded_by_its_verifier",
    ),
    "correct_threshold": (
        "tests/llm/tasks/test_correctness.py::test_a_length_penalty_with_a_threshold_counts_exact_answers",
    ),
    "eval_steps": (
        "tests/llm/test_grpo_user_metrics.py::test_eval_steps_validates_every_n_steps_with_the_final_evaluations_samples",
    ),
    "reward_timeout": (
        "tests/llm/test_true_culprits.py::test_a_reward_call_over_reward_timeout_stops_naming_the_function",
    ),
    "out": ("tests/llm/test_train_run.py::test_run_directory_contents",),
    "seed": (
        GRPO_ENGINE + "test_a_steps_samples_are_drawn_from_the_run_seed_and_the_step",
        ES_ENGINE + "test_a_plans_seeds_follow_the_documented_derivation",
        ES_ENGINE + "test_the_seed_and_the_reward_standardisation_together_decide_the_update",
    ),
    "steps": ("tests/llm/test_train_cli.py::test_start_line_says_how_many_iterations_the_budget_gives", RUNDIR),
    "switch_step": (
        "tests/llm/test_train_config.py::test_flop_match_with_n_equal_4g_gives_equal_steps",
        "tests/llm/test_resume_point.py::test_a_schedule_stopped_at_its_switch_resumes_there",
    ),
    "budget": ("tests/llm/test_train_config.py::test_equal_responses_budget_converts_es_steps",),
    "batch_size": (COUNTED,),
    "train_pool": (
        RUNDIR,
        "tests/llm/test_own_data_settings.py::test_problem_counts_fit_a_small_file_or_name_the_flag",
    ),
    "temperature": (
        PROBE,
        GRPO_ENGINE + "test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand",
        GRPO_ENGINE + "test_the_frozen_sampling_policy_is_read_at_the_sampling_temperature",
    ),
    "max_completion_length": (EVAL, "tests/llm/engines/test_hf.py::test_max_new_tokens_and_length_finish"),
    "truncate_prompts": (
        "tests/llm/test_load_checks.py::test_truncate_prompts_cuts_them_to_their_last_tokens_and_says_so",
    ),
    "engine": (
        "tests/llm/engines/test_vllm_engine.py::test_same_statistics_as_hf_within_sampling_error",
        VLLM_RUN,
        "tests/llm/test_gpu.py::test_an_es_then_grpo_run_keeps_every_tensor_on_cuda",
    ),
    "dtype": (
        ES_ENGINE + "test_the_engines_dtype_and_in_place_perturbation_together_decide_the_restore_residue",
        BF16_DRIFT,
        "tests/llm/test_gpu.py::test_an_es_then_grpo_run_keeps_every_tensor_on_cuda",
        "tests/llm/test_lemma_measurements_dtype.py::test_scorer_gets_the_weights_as_a_bf16_engine_holds_them",
        "tests/llm/test_train_drift.py::test_saved_weights_as_a_bf16_engine_stores_them",
    ),
    "threads": (RUNDIR,),
    "checkpoint_every": (RUNDIR, "tests/llm/test_train_run.py::test_run_directory_contents"),
    "checkpoint_dense": (
        RUNDIR,
        "tests/paper_checks/reproduce/test_plan.py::test_a_schedules_second_method_is_checkpointed_densely_from_its_switch",
    ),
    "probe": (
        "tests/llm/test_shared_measurements.py::test_a_run_without_the_probe_measures_the_rest_alike",
        "tests/llm/test_own_data_settings.py::test_the_papers_measurements_are_off_on_your_data_unless_asked_for",
        FIT_PROBE,
        FIT_PROBE_GIVEN,
    ),
    "probe_every": (TRACKING + "test_evaluations_and_population_measurements_are_scalars_when_measured",),
    "step_samples": (COUNTED,),
    "probe_prompts": (PROBE, FIT_PROBE, FIT_PROBE_GIVEN),
    "probe_members": (PROBE,),
    "probe_samples": (PROBE,),
    "probe_center_samples": (PROBE,),
    "eval_problems": (EVAL,),
    "eval_solutions": (
        "tests/llm/tasks/test_solution_blocks.py::test_eval_solutions_0_is_the_tasks_own_draw_and_k_moves_test_and_"
        "validation_only",
        "tests/llm/tasks/test_solution_blocks.py::test_a_drawn_block_holds_instances_of_the_test_split_with_exactly_k_"
        "solutions",
    ),
    "eval_skip": (
        "tests/llm/tasks/test_solution_blocks.py::test_eval_skip_moves_the_test_prompts_past_the_first_m_and_leaves_"
        "validation_alone",
    ),
    "train_solutions": (
        "tests/llm/tasks/test_solution_blocks.py::test_train_solutions_draws_the_training_pool_from_the_block_and_0_"
        "keeps_the_tasks_own_pool",
    ),
    "eval_samples": (EVAL,),
    "eval_temperature": (EVAL, CURVE_REUSE),
    "eval_ks": (EVAL,),
    "heldout_task": (EVAL,),
    "heldout_problems": (EVAL,),
    "threshold_keep": (EVAL, COUNTED),
    "workers": (RAY + "test_two_actors_equal_single_process_and_dead_actor_members_rerun",),
    "ray_address": (
        "tests/llm/test_train_run.py::test_bad_population_settings_fail_before_any_work",
        RAY + "test_errors_before_any_work",
    ),
    "report_to": (TRACKING + "test_every_step_metric_is_a_tensorboard_scalar_at_its_step",),
    "completions_kept": (TRACKING + "test_completions_are_kept_bounded_with_their_rewards_and_shown_as_text", RUNDIR),
    "completions_every": (TRACKING + "test_completions_are_kept_bounded_with_their_rewards_and_shown_as_text", RUNDIR),
    "device": (
        "tests/llm/test_device.py::test_a_run_records_its_resolved_device_and_a_resume_on_cuda_is_refused",
        "tests/llm/test_device.py::test_ray_actors_reserve_one_gpu_each_on_a_cuda_run_and_none_on_the_cpu",
    ),
    "gpu_memory_utilization": (
        VLLM_RUN,
        "tests/llm/test_gpu.py::test_vllm_inplace_gives_the_reload_paths_rewards_and_update",
    ),
    # ---- llm train: [es]
    "es.population_size": (ES_NOISE + "test_update_rebuilt_from_seeds_equals_the_explicit_member_sum", COUNTED),
    "es.sigma": (ES_ENGINE + "test_member_weights_and_exact_restore",),
    "es.alpha": (ES_ENGINE + "test_update_equals_alpha_over_n_sum_z_eps_rebuilt_independently",),
    "es.member_temperature": (ES_ENGINE + "test_update_equals_alpha_over_n_sum_z_eps_rebuilt_independently",),
    "es.member_samples": (ES_ENGINE + "test_update_equals_alpha_over_n_sum_z_eps_rebuilt_independently",),
    "es.antithetic": (
        ES_NOISE + "test_update_rebuilt_from_seeds_equals_the_explicit_member_sum",
        ES_ENGINE + "test_member_weights_and_exact_restore",
    ),
    "es.zscore": (
        ES_ENGINE + "test_centered_rewards_times_center_scale",
        ES_ENGINE + "test_the_seed_and_the_reward_standardisation_together_decide_the_update",
    ),
    "es.center_scale": (ES_ENGINE + "test_centered_rewards_times_center_scale",),
    "es.param_pattern": (ES_ENGINE + "test_parameter_subset_leaves_other_parameters_untouched",),
    "es.null_control": (ES_ENGINE + "test_null_control_ignores_rewards_and_skips_steps_without_signal",),
    "es.inplace_bf16": (
        ES_ENGINE + "test_inplace_bf16_members_and_restore_are_the_papers_bf16_arithmetic",
        ES_ENGINE + "test_the_engines_dtype_and_in_place_perturbation_together_decide_the_restore_residue",
        BF16_DRIFT,
    ),
    "es.noise_chunk": (ES_NOISE + "test_noise_is_read_from_one_table_at_hashed_places",),
    "es.tag": (
        "tests/paper_checks/reproduce/test_plan.py::test_the_answer_differs_from_the_paper_regime_answer_only_where_the_premise_needs",
    ),
    # ---- llm train: [grpo]
    "grpo.num_generations": (GRPO_ENGINE + "test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand",),
    "grpo.learning_rate": (GRPO_ENGINE + "test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand",),
    "grpo.beta": (
        GRPO_ENGINE + "test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand",
        PARITY + "test_trl_loss_and_gradient_match_ours",
    ),
    "grpo.epsilon": (GRPO_ENGINE + "test_later_inner_iterations_are_off_policy_and_clipped",),
    "grpo.num_iterations": (
        GRPO_ENGINE + "test_later_inner_iterations_are_off_policy_and_clipped",
        "tests/llm/test_train_config.py::test_grpo_flops_count_num_iterations_as_the_bandit_does",
    ),
    "grpo.loss_type": ("tests/llm/test_grpo_loss.py::test_loss_matches_token_by_token_reference",),
    "grpo.scale_rewards": (
        "tests/llm/test_grpo_loss.py::test_group_advantages",
        PARITY + "test_advantages_are_trls_with_the_population_std",
    ),
    "grpo.max_grad_norm": (GRPO_ENGINE + "test_the_gradient_is_clipped_to_max_grad_norm_before_the_update",),
    "grpo.weight_decay": (GRPO_ENGINE + "test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand",),
    "grpo.micro_batch_size": (GRPO_ENGINE + "test_one_steps_loss_kl_gradient_and_update_equal_their_values_by_hand",),
    "grpo.epsilon_high": (PARITY + "test_trl_variants_match_ours", PARITY + "test_variants_differ_from_the_default"),
    "grpo.mask_truncated_completions": (
        PARITY + "test_trl_variants_match_ours",
        PARITY + "test_variants_differ_from_the_default",
    ),
    "grpo.top_p": ("tests/llm/engines/test_hf.py::test_top_p_samples_only_from_the_nucleus",),
    "grpo.top_k": (
        VARIANTS + "test_top_k_and_min_p_sample_the_restricted_law",
        VARIANTS + "test_top_k_reaches_the_rollouts",
    ),
    "grpo.min_p": (VARIANTS + "test_top_k_and_min_p_sample_the_restricted_law",),
    "grpo.lr_scheduler_type": (
        VARIANTS + "test_lr_factor_is_transformers_schedule",
        VARIANTS + "test_grpo_steps_use_the_scheduled_lr",
    ),
    "grpo.warmup_ratio": (VARIANTS + "test_lr_factor_is_transformers_schedule",),
    "grpo.warmup_steps": (VARIANTS + "test_grpo_steps_use_the_scheduled_lr",),
    "grpo.use_peft": (LORA,),
    "grpo.lora_r": (LORA,),
    "grpo.lora_alpha": (LORA,),
    "grpo.lora_dropout": (VARIANTS + "test_lora_dropout_drops_the_adapters_input_in_the_update_only",),
    "grpo.lora_target_modules": (LORA,),
    "grpo.gradient_checkpointing": (VARIANTS + "test_gradient_checkpointing_gives_the_same_loss_and_gradient",),
    # ---- llm train: [grpo], the coverage-keeping variants
    "grpo.entropy_coef": (
        PARITY + "test_trl_entropy_options_and_sequence_level_match_ours",
        VARIANT_RUNS + "test_a_grpo_run_with_each_variant_finishes_and_logs_its_statistics",
    ),
    "grpo.use_adaptive_entropy": (COVERAGE + "test_adaptive_entropy_coefficient_follows_trls_rule", VARIANT_STATE),
    "grpo.entropy_coef_min": (COVERAGE + "test_adaptive_entropy_coefficient_follows_trls_rule",),
    "grpo.entropy_coef_max": (COVERAGE + "test_adaptive_entropy_coefficient_follows_trls_rule",),
    "grpo.entropy_coef_delta": (COVERAGE + "test_adaptive_entropy_coefficient_follows_trls_rule",),
    "grpo.entropy_target": (COVERAGE + "test_adaptive_entropy_coefficient_follows_trls_rule", VARIANT_STATE),
    "grpo.top_entropy_quantile": (
        PARITY + "test_trl_entropy_options_and_sequence_level_match_ours",
        COVERAGE + "test_high_entropy_mask_keeps_the_top_quantile",
    ),
    "grpo.importance_sampling_level": (PARITY + "test_trl_entropy_options_and_sequence_level_match_ours",),
    "grpo.sapo_temperature_pos": (COVERAGE + "test_sapo_temperatures_set_the_soft_gate",),
    "grpo.sapo_temperature_neg": (COVERAGE + "test_sapo_temperatures_set_the_soft_gate",),
    "grpo.clip_cov_ratio": (
        COVERAGE + "test_clip_cov_cuts_the_gradient_of_unclipped_tokens_inside_the_covariance_band",
        COVERAGE + "test_clip_cov_draws_its_share_among_the_candidates_alone",
    ),
    "grpo.clip_cov_lb": (COVERAGE + "test_clip_cov_cuts_the_gradient_of_unclipped_tokens_inside_the_covariance_band",),
    "grpo.clip_cov_ub": (COVERAGE + "test_clip_cov_cuts_the_gradient_of_unclipped_tokens_inside_the_covariance_band",),
    "grpo.kl_cov_ratio": (COVERAGE + "test_kl_cov_penalizes_the_tokens_of_largest_covariance",),
    "grpo.ppo_kl_coef": (COVERAGE + "test_kl_cov_penalizes_the_tokens_of_largest_covariance",),
    "grpo.adv_estimator": (
        COVERAGE + "test_grpo_passk_gives_the_gap_to_the_best_alone",
        COVERAGE + "test_passk_analytic_equals_the_mean_over_k_subsets",
        COVERAGE + "test_pkpo_is_an_unbiased_gradient_of_pass_at_k",
        COVERAGE + "test_a_steps_advantages_follow_the_estimator",
    ),
    "grpo.pass_k": (
        COVERAGE + "test_passk_analytic_equals_the_mean_over_k_subsets",
        COVERAGE + "test_a_steps_advantages_follow_the_estimator",
    ),
    "grpo.zero_success_gating": (
        COVERAGE + "test_zero_success_gating_updates_only_prompts_never_solved_before",
        VARIANT_STATE,
    ),
    "grpo.outcome_bonus_coef": (
        COVERAGE + "test_outcome_bonus_is_c_over_root_count_of_the_answer_so_far",
        VARIANT_STATE,
    ),
    # ---- llm train: [population]
    "population.batched": (BATCHED + "test_batched_es_step_equals_the_trainers_member_by_member_step", STRATEGY),
    "population.noise_rank": (
        BATCHED + "test_lowrank_noise_has_rank_r_and_unit_variance_entries",
        ES_NOISE + "test_low_rank_members_and_updates_equal_their_factors_product",
    ),
    "population.max_rows": (BATCHED + "test_rollouts_identical_to_member_by_member",),
    "population.lowrank_layout": (BATCHED + "test_lowrank_layout_auto_stacks_while_the_stacked_matrices_fit",),
    "population.keep_noise_mb": (
        BATCHED + "test_kept_noise_gives_the_update_drawn_again_from_the_seeds_within_its_budget",
    ),
    "population.members": (
        "tests/llm/es/test_conformance.py::test_every_hf_strategy_gives_one_by_ones_rewards_and_update",
        STRATEGY,
    ),
    # ---- the Ray actors (llm/member_options.py DistributedConfig, filled from workers, ray_address, threads, device)
    "distributed.workers": (RAY + "test_two_actors_equal_single_process_and_dead_actor_members_rerun", STRATEGY),
    "distributed.address": (RAY + "test_errors_before_any_work", STRATEGY),
    "distributed.cpus_per_worker": (RAY + "test_two_actors_equal_single_process_and_dead_actor_members_rerun",),
    "distributed.threads_per_worker": (RAY + "test_two_actors_equal_single_process_and_dead_actor_members_rerun",),
    "distributed.actor_timeout_s": (RAY + "test_a_call_not_answered_within_the_actor_timeout_drops_the_actor",),
    "distributed.gpus_per_worker": (
        "tests/llm/test_device.py::test_ray_actors_reserve_one_gpu_each_on_a_cuda_run_and_none_on_the_cpu",
        "tests/llm/test_gpu.py::test_ray_actors_sharing_the_gpu_train_the_single_process_weights",
    ),
    # ---- a reproduction's budget (paper_checks/reproduce/budgets.py Budget)
    "budget.base_preset": (BUDGET + "test_presets_scale_grid_and_curve_reach_their_jobs",),
    "budget.sweep_preset": (BUDGET + "test_presets_scale_grid_and_curve_reach_their_jobs",),
    "budget.seeds": (BUDGET + "test_seeds_task_and_the_shared_settings_reach_every_run",),
    "budget.common": (BUDGET + "test_seeds_task_and_the_shared_settings_reach_every_run",),
    "budget.es": (BUDGET + "test_seeds_task_and_the_shared_settings_reach_every_run",),
    "budget.grpo": (BUDGET + "test_seeds_task_and_the_shared_settings_reach_every_run",),
    "budget.sweep_populations": (BUDGET + "test_sweep_populations_give_a_run_per_population_and_base",),
    "budget.simulate_scale": (BUDGET + "test_presets_scale_grid_and_curve_reach_their_jobs",),
    "budget.grid": (
        BUDGET + "test_presets_scale_grid_and_curve_reach_their_jobs",
        "tests/paper_checks/test_lemma_grid.py::test_grid_on_the_tiny_model_records_its_task_and_settings",
    ),
    "budget.switch_fraction": (BUDGET + "test_schedules_switch_fraction_and_es_variants_choose_the_runs",),
    "budget.task": (BUDGET + "test_seeds_task_and_the_shared_settings_reach_every_run",),
    "budget.es_variants": (BUDGET + "test_schedules_switch_fraction_and_es_variants_choose_the_runs",),
    "budget.schedules": (BUDGET + "test_schedules_switch_fraction_and_es_variants_choose_the_runs",),
    "budget.curve": (BUDGET + "test_presets_scale_grid_and_curve_reach_their_jobs",),
    "budget.base_settings": (BUDGET + "test_base_settings_and_the_premise_control_reach_their_jobs",),
    "budget.premise_control": (BUDGET + "test_base_settings_and_the_premise_control_reach_their_jobs",),
    "budget.es_updates": (ARMS + "test_the_answer_plans_es_to_its_cap_in_updates_and_grpo_to_its_steps",),
    "budget.lemma_as_stated": (ARMS + "test_the_answer_measures_lemma_1_as_stated_once_on_its_base",),
    "budget.es_variant_updates": (ARMS + "test_the_answer_plans_es_to_its_cap_in_updates_and_grpo_to_its_steps",),
    "budget.es_common": (ARMS + "test_the_answers_curves_measure_every_checkpoint_and_one_at_least_every_10_steps",),
    "budget.arms": (
        ARMS + "test_the_answer_job_graph_evaluates_endpoints_after_their_runs_and_runs_the_base_draws_last",
        ARMS + "test_the_arms_run_resume_and_attach_what_they_measured",
    ),
    "budget.purpose": (
        "tests/paper_checks/reproduce/test_jobs.py::test_the_small_budget_report_says_what_it_can_decide",
    ),
    # ---- llm curve RUN_DIR (llm/curve.py)
    "curve --points": (
        CURVE + "test_resumed_run_keeps_only_the_current_layout",
        CURVE + "test_curve_steps_spread_and_keep_the_last",
    ),
    "curve --samples": (CURVE_REUSE,),
    "curve --temperature": (CURVE_REUSE, CURVE + "test_curve_of_a_real_run"),
    "curve --problems": (
        CURVE_REUSE,
        CURVE + "test_a_training_split_curve_never_reads_a_test_prompt_and_is_not_read_as_one",
    ),
    "curve --resolution": (CURVE + "test_layout_refines_wide_pass1_jumps_where_a_checkpoint_lies_inside",),
    "curve --max_points": (CURVE + "test_layout_refines_wide_pass1_jumps_where_a_checkpoint_lies_inside",),
    "curve --split": (CURVE + "test_a_training_split_curve_never_reads_a_test_prompt_and_is_not_read_as_one",),
    "curve --no_progress": ("tests/llm/test_train_cli.py::test_progress_switches",),
    # ---- simulate run NAME (simulate/cli.py)
    "simulate --out": (
        "tests/simulate/experiments/test_experiments.py::test_scale_sets_the_number_of_updates_and_no_progress_hides_the_bars",
    ),
    "simulate --scale": (
        "tests/simulate/experiments/test_experiments.py::test_scale_sets_the_number_of_updates_and_no_progress_hides_the_bars",
    ),
    "simulate --no_progress": (
        "tests/simulate/experiments/test_experiments.py::test_scale_sets_the_number_of_updates_and_no_progress_hides_the_bars",
    ),
    "simulate --seeds": ("tests/simulate/experiments/test_experiments.py::test_run_one_with_seeds_and_list",),
}

# settings whose effects depend on each other: each pair has a case of its own
INTERACTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("dtype", "es.inplace_bf16"): (
        ES_ENGINE + "test_the_engines_dtype_and_in_place_perturbation_together_decide_the_restore_residue",
        BF16_DRIFT,
    ),
    ("curve --temperature", "curve --samples"): (CURVE_REUSE,),
    ("seed", "es.zscore"): (ES_ENGINE + "test_the_seed_and_the_reward_standardisation_together_decide_the_update",),
    # which member strategy runs: a cluster address with one worker is Ray; batched counts only without workers
    ("distributed.workers", "distributed.address"): (STRATEGY,),
    ("distributed.workers", "population.batched"): (STRATEGY,),
    ("population.members", "population.batched"): (STRATEGY,),
    # which prompt counts are fitted to a user's data: the probe's only when the probe runs
    ("probe", "test_data"): (FIT_PROBE,),
    ("probe", "probe_prompts"): (FIT_PROBE, FIT_PROBE_GIVEN),
}
# settings whose effect shows only in combination: each pair must have a test of the pair in INTERACTIONS
MUST_INTERACT = (
    ("distributed.workers", "distributed.address"),
    ("distributed.workers", "population.batched"),
    ("probe", "test_data"),
    ("probe", "probe_prompts"),
    ("dtype", "es.inplace_bf16"),
    ("curve --temperature", "curve --samples"),
)


def _flags(parser: argparse.ArgumentParser, group: str) -> list[str]:
    """The optional flags of a parser (by destination), help left out."""
    return [f"{group} --{a.dest}" for a in parser._actions if a.option_strings and a.dest != "help"]


def documented_settings() -> list[str]:
    """Every setting, read from the code that defines it."""
    names = [name for name, *_ in train_settings()]
    names += [f"distributed.{f.name}" for f in dataclasses.fields(DistributedConfig)]
    names += [f"budget.{f.name}" for f in dataclasses.fields(Budget)]
    curve_parser = argparse.ArgumentParser()
    curve.add_arguments(curve_parser)
    names += _flags(curve_parser, "curve")
    run = next(a for a in simulate_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    names += _flags(run, "simulate")
    return names


@lru_cache(maxsize=None)
def _tests_in(path: str) -> frozenset[str]:
    """Names of the test functions of a test file (module level, and Class::method)."""
    tree = ast.parse((ROOT / path).read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names |= {
                f"{node.name}::{m.name}"
                for m in node.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name.startswith("test")
            }
    return frozenset(names)


def _exists(node_id: str) -> bool:
    path, _, name = node_id.partition("::")
    return (ROOT / path).is_file() and name.split("[")[0] in _tests_in(path)


def test_every_documented_setting_has_a_test_of_its_effect():
    settings = documented_settings()
    assert len(settings) == len(set(settings)), "a setting listed twice"
    missing = [s for s in settings if not SETTING_TESTS.get(s)]
    assert not missing, f"settings without a test of their effect (add one and name it in SETTING_TESTS): {missing}"
    stale = sorted(set(SETTING_TESTS) - set(settings))
    assert not stale, f"SETTING_TESTS names settings that no longer exist: {stale}"


@pytest.mark.parametrize("table", ["settings", "interactions"])
def test_every_named_test_exists(table):
    named = {t for tests in (SETTING_TESTS if table == "settings" else INTERACTIONS).values() for t in tests}
    absent = sorted(t for t in named if not _exists(t))
    assert not absent, f"tests named in {table} that do not exist: {absent}"


def test_every_interacting_pair_is_made_of_documented_settings():
    settings = set(documented_settings())
    assert all(a in settings and b in settings for a, b in INTERACTIONS), list(INTERACTIONS)
    for (a, b), tests in INTERACTIONS.items():  # the pair's cases are also tests of each setting
        assert tests and all(t in SETTING_TESTS[a] and t in SETTING_TESTS[b] for t in tests), (a, b)


def test_settings_that_act_only_together_have_a_test_of_the_pair():
    absent = [pair for pair in MUST_INTERACT if not INTERACTIONS.get(pair)]
    assert not absent, f"pairs of settings whose effect shows only together, without a test of the pair: {absent}"
