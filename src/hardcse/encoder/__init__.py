"""Sentence encoders: build, encode fast, train with the SimCSE objectives."""
