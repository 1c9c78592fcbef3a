"""inbox workflow: read and answered, and the search index on inquiries

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

Three columns on ``submissions``: ``read_at`` (set when an admin first opens
the inquiry), ``answered_at`` and ``answered_by`` (the admin who marked it
answered; ``NULL`` again if that admin is removed). Existing inquiries
start unread and unanswered.

The search index (``app.search`` explains it) is made here, per database:

* SQLite: an FTS5 table ``submissions_fts`` with the trigram tokenizer,
  external content (it stores no copy of the text, only the index), kept in
  step with ``submissions`` by three triggers, so every insert, update and
  delete (cleanup batches, admin deletes, "Delete all spam") updates it in
  the same transaction. Existing rows are indexed by a ``rebuild``.
* PostgreSQL: the ``pg_trgm`` extension and one GIN trigram index on each of
  name, email and message. An index follows deletions by itself.

Downgrading drops the columns and the index (the extension is left: other
databases objects may use it).
"""

from alembic import op
import sqlalchemy as sa


revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

TRIGRAM_COLUMNS = ('name', 'email', 'message')

SQLITE_UP = [
    "CREATE VIRTUAL TABLE submissions_fts USING fts5("
    "name, email, message, content='submissions', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER submissions_fts_insert AFTER INSERT ON submissions BEGIN "
    "INSERT INTO submissions_fts(rowid, name, email, message) VALUES (new.id, new.name, new.email, new.message); "
    "END",
    "CREATE TRIGGER submissions_fts_delete AFTER DELETE ON submissions BEGIN "
    "INSERT INTO submissions_fts(submissions_fts, rowid, name, email, message) "
    "VALUES ('delete', old.id, old.name, old.email, old.message); "
    "END",
    # Only a change to the indexed text re-indexes a row (marking it read does not).
    "CREATE TRIGGER submissions_fts_update AFTER UPDATE OF name, email, message ON submissions BEGIN "
    "INSERT INTO submissions_fts(submissions_fts, rowid, name, email, message) "
    "VALUES ('delete', old.id, old.name, old.email, old.message); "
    "INSERT INTO submissions_fts(rowid, name, email, message) VALUES (new.id, new.name, new.email, new.message); "
    "END",
    "INSERT INTO submissions_fts(submissions_fts) VALUES ('rebuild')",
]

SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS submissions_fts_update",
    "DROP TRIGGER IF EXISTS submissions_fts_delete",
    "DROP TRIGGER IF EXISTS submissions_fts_insert",
    "DROP TABLE IF EXISTS submissions_fts",
]


def upgrade() -> None:
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('read_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('answered_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('answered_by', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(
            batch_op.f('fk_submissions_answered_by_admins'), 'admins', ['answered_by'], ['id'], ondelete='SET NULL')
        batch_op.create_index(
            'ix_submissions_status_read_at_created_at', ['status', 'read_at', 'created_at'], unique=False)
    _create_search_index()


def downgrade() -> None:
    _drop_search_index()
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index('ix_submissions_status_read_at_created_at')
        batch_op.drop_constraint(batch_op.f('fk_submissions_answered_by_admins'), type_='foreignkey')
        batch_op.drop_column('answered_by')
        batch_op.drop_column('answered_at')
        batch_op.drop_column('read_at')


def _create_search_index() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        for statement in SQLITE_UP:
            op.execute(statement)
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for column in TRIGRAM_COLUMNS:
        op.execute(f"CREATE INDEX ix_submissions_{column}_trgm ON submissions USING gin ({column} gin_trgm_ops)")


def _drop_search_index() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        for statement in SQLITE_DOWN:
            op.execute(statement)
        return
    for column in TRIGRAM_COLUMNS:
        op.execute(f"DROP INDEX IF EXISTS ix_submissions_{column}_trgm")
