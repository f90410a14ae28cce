"""What a run reports: the held-out comparison, the independent judge, reports, tables and plots."""
