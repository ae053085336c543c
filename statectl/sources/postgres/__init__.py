"""PostgresSaver databases, read-only (FORMAT §1.2).

* Every query runs in a READ ONLY transaction of its own (autocommit, on a connection whose
  `default_transaction_read_only` is on): none stays open between queries, so a long command
  never holds the lock a migration or VACUUM FULL waits on (nor every session queued behind
  it), and an idle TUI is never "idle in transaction". `setup()` and migrations are never run.
* A checkpoint is its `checkpoints.checkpoint` JSONB (primitive channel values inline, `true`
  marking a delta snapshot) merged with the `checkpoint_blobs` rows named by its
  `channel_versions`, exactly as `PostgresSaver` reads it.
* A `ShallowPostgresSaver` database (one checkpoint per thread and namespace, its id inside the
  JSONB, blobs keyed by channel alone, no parent) is read through the same queries.
* `threads` pages by thread id with a loose index scan, so a page reads only its own threads'
  rows; `--sort recent` must group the whole table and says so.
* The password of a URL is never printed: not in messages, labels or `--debug`.

Laid out as: `source` (the connection and one thread's rows), `listing` (threads, their
statuses and filters), `upkeep` (what `size`, `prune` and `doctor` read, a batch of threads per
query) and `session` (the session's settings and the query plumbing the others share).
"""

from statectl.sources.postgres.listing import may_plan_tasks
from statectl.sources.postgres.session import Texts
from statectl.sources.postgres.source import PostgresSource

__all__ = ["PostgresSource", "Texts", "may_plan_tasks"]
