"""Model selection during training: evaluate every N steps and at the last step, keep the best checkpoint."""

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments


class EvaluateAtEnd(TrainerCallback):
    """Evaluate and save at the last step too, so the end of training can be the selected checkpoint even when
    the number of steps is not a multiple of ``eval_steps``."""

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> TrainerControl:
        if state.global_step == state.max_steps:
            control.should_evaluate = True
            control.should_save = True
        return control


def best_checkpoint_arguments(output_dir: str, eval_steps: int, metric: str, seed: int) -> dict:
    """Training-argument values shared by hardcse's trainers: evaluate every ``eval_steps`` steps, keep the
    checkpoint with the highest ``metric``, seed everything, stay offline and quiet."""
    return {
        "output_dir": output_dir,
        "eval_strategy": "steps",
        "eval_steps": eval_steps,
        "save_strategy": "steps",
        "save_steps": eval_steps,
        "save_total_limit": 1,
        "load_best_model_at_end": True,
        "metric_for_best_model": metric,
        "greater_is_better": True,
        "logging_steps": max(1, eval_steps // 5),
        "seed": seed,
        "data_seed": seed,
        "report_to": "none",
        "dataloader_pin_memory": False,
    }
