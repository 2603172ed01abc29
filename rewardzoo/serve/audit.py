"""The audit trail of ``rewardzoo serve``: which client's which request trained which judge step, and who was
refused; ``rewardzoo serve status DIR`` reads it back.

``DIR/audit.jsonl`` is appended to, never rewritten: one JSON line per request,

    {"time": ..., "client": "trainer", "request_id": "...", "rows": 64, "event": "learned", "judge_step": 12,
     "client_references": [[row, "prompt", "reference"], ...]}
    {"time": ..., "client": "eval", "request_id": "...", "rows": 16, "event": "scored", "judge_step": 12}
    {"time": ..., "client": null, "event": "refused", "status": 401, "reason": "..."}
    {"time": ..., "event": "start", "judge_step": 12}           the service (re)started, its judge at step 12

After a kill, a ``learned`` line whose step is past the next ``start`` line's step is an update the kill cut
short (the checkpoint lacks it); the retried request is learned again at that step.

A ``learned`` line is written and fsync'd by the judge's worker before the batch's checkpoint, like the
service's log, so every update on disk has its line (a kill between the two leaves a line whose step the
checkpoint lacks: a lost update, which the service also reports). ``scored`` and ``refused`` lines are
flushed, not fsync'd: a flood of refused requests must not cost a disk sync each. No line holds a token.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from pathlib import Path

AUDIT_FILE = "audit.jsonl"


class Audit:
    """The append-only audit log of one service directory (called from the event loop and the judge's worker)."""

    def __init__(self, out_dir: Path):
        self.path = Path(out_dir) / AUDIT_FILE
        self._lock = threading.Lock()

    def write(self, row: dict, *, sync: bool = False) -> None:
        """Append ``row`` (timestamped); ``sync`` fsyncs it before returning."""
        line = json.dumps({"time": round(time.time(), 3), **row}) + "\n"
        with self._lock, open(self.path, "a") as f:
            f.write(line)
            f.flush()
            if sync:
                os.fsync(f.fileno())


def read_jsonl(path: Path) -> list[dict]:
    """The lines of an append-only JSONL file (none when it is missing; a torn last line from a kill is skipped)."""
    rows = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def audit_rows(out_dir: str | Path) -> list[dict]:
    """The lines of ``DIR/audit.jsonl``."""
    return read_jsonl(Path(out_dir) / AUDIT_FILE)


def client_counts(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per client: requests learned from, scored only and refused, rows learned, client references learned."""
    counts: dict[str, Counter] = {}
    for row in rows:
        event = row.get("event")
        if event == "start":
            continue
        c = counts.setdefault(row.get("client") or "(no token)", Counter())
        if event == "refused":
            c[f"refused_{row.get('status')}"] += 1
            continue
        c[event] += 1
        if event == "learned":
            c["rows_learned"] += row.get("rows", 0)
            c["references_learned"] += len(row.get("client_references", []))
    return {name: dict(sorted(c.items())) for name, c in sorted(counts.items())}
