"""Tuning the generator by RL: the policy, PPO and GRPO steps, the tuning loop and the tuned-generator cache."""
