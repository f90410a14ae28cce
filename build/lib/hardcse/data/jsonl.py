"""JSON Lines files: one JSON object a line (synthetic.jsonl, ppo_log.jsonl, diagnostics.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path: str | Path) -> list[dict]:
    """Every non-empty line of ``path`` as a JSON object."""
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
