"""Real ES and GRPO training of causal LMs: tasks, verifiers, tiny base model, engines, trainers."""
