"""Reinforcement tuning of the generator: the dual reward and PPO."""
