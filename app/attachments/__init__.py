"""Files sent with inquiries: what a form takes, how they are stored, and how admins read them.

* ``rules``: the types allowed (detected from the bytes, never the name), the
  display name kept, the ``Content-Disposition`` of a download;
* ``uploads``: a submission's files checked against its form's file fields
  and the limits (413 over the size, 415 a type not allowed, 422 too many);
* ``store``: the bytes in the database in pieces of ``CHUNK_SIZE``, written
  in the inquiry's own transaction and read a piece at a time.

The bytes live in the database on purpose: every replica reads them with
no shared volume, and each way an inquiry goes (the cleanup, an admin's
delete, the spam folder's, an erasure) takes its files in the same
transaction, by ``ON DELETE CASCADE``, so no row points at a missing file
and no file outlives its row after a crash. The cleanup deletes an expired
inquiry's pieces first, in batches of a few megabytes
(``app.cleanup.targets``), and on SQLite ``secure_delete`` and the forgetting
after (``app.inquiries.gone``) leave no copy of the bytes in the file or its WAL.
"""

from __future__ import annotations

from flask import current_app

from app.attachments.uploads import limits_text


def file_limits(most: int) -> str:
    """A file field's limits in words: how many files, how large in all, which types."""
    config = current_app.config
    return limits_text(most, config["ATTACHMENT_MAX_BYTES"], config["ATTACHMENT_TYPES"])
