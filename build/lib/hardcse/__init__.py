"""hardcse: better sentence encoders from hard contrastive data (ART, Data-CUBE, DiffAug)."""

__version__ = "0.1.0"
