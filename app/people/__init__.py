"""People: what Sundown holds about one e-mail address, its export, and its erasure.

The two requests the law gives every person in the inbox: "what do you hold
about me?" (GDPR art. 15) and "erase it" (art. 17). One room, six modules:

* ``lookup``: the address as intake normalises it, the predicate that finds
  its inquiries (every folder, held or past retention), their audit entries,
  and the keyed hash that stands for the address wherever it must be kept;
* ``records``: the export, JSON (a stable, documented shape) and CSV,
  streamed page by page;
* ``archive``: the export with the files sent, one zip, streamed a piece at
  a time;
* ``erasure``: erase every inquiry of an address not on legal hold, with an
  ``erasures`` record;
* ``reapply``: export those records, and apply them again after a restore;
* ``cli``: ``flask people ...`` and ``flask erasures ...``.

The admin pages are in ``app.admin.people``.
"""
