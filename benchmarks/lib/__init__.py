"""What the benchmark scripts share, imported by them and never run alone: writing a record (record.py), its
provenance (provenance.py), its large files compressed (record_files.py), an assay's record (record_assay.py), the
seeded runs' records (seeded.py), a model folder's digest (digests.py), the speed benchmarks' stand-in models
(stand_ins.py), the warm-start benchmarks' models and settings (warm.py) and their pages (warm_pages.py), and the
evidence pages' tables and answers (art_evidence_tables.py, art_answers.py, hard_correct_tables.py). Every other
file of benchmarks/ is a script a record names."""
