"""``rewardzoo serve``: any zoo reward as an HTTP service that co-trains its judge on what it scores
(docs/serving.md).

    service.py   the reward, built as a recipe builds it: rows → Rollouts, score → update, checkpoints
    batcher.py   concurrent requests merged into bounded batches for the judge, with back-pressure
    app.py       the HTTP face (FastAPI on uvicorn): /score, /openrlhf, /health, and the request limits
    command.py   the ``rewardzoo serve`` command line

The trainers' side (a URL, or one small function) is in :mod:`rewardzoo.integrations.remote`.
"""
