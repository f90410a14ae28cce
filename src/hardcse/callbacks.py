"""Trainer callbacks shared by the encoder and discriminator trainers."""

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
