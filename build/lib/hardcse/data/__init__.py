"""Readers and writers for the data hardcse uses and the formats users bring."""
