"""Data-CUBE: task vectors, annealed task order, instance order, the batch plan and training from it."""
