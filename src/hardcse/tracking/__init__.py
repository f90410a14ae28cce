"""Experiment trackers: ``report_to`` (config.py) and what a run sends them (run.py, callbacks.py)."""
