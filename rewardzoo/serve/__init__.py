"""``rewardzoo serve``: any zoo reward as an HTTP service that co-trains its judge on what it scores
(docs/serving.md).

    service.py   the reward, built as a recipe builds it: rows → Rollouts, score → update, checkpoints
    batcher.py   concurrent requests merged into bounded batches for the judge, with back-pressure
    app.py       the HTTP face (FastAPI on uvicorn): /score, /openrlhf, /policy, /health, who may call them, the limits
    auth.py      client tokens and scopes (``--tokens``), kept as salted hashes
    limits.py    per-client request rate and share of the judge's updates (429 + Retry-After)
    audit.py     the append-only audit log: which client's request trained which judge step
    command.py   the ``rewardzoo serve`` command line (and ``serve token``, ``serve status``)

The trainers' side (a URL, or one small function) is in :mod:`rewardzoo.integrations.remote`; the OpenReward
Standard's, in :mod:`rewardzoo.integrations.ors`.
"""
