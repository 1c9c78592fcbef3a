"""table names: each table is named for its class

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04

``prune_runs`` becomes ``cleanup_runs`` (the cleanup's ledger, ``CleanupRun``),
``verification`` ``one_time_secrets``, ``session`` ``admin_logins``,
``audit_log`` ``audit_entries`` and ``outbox`` ``deliveries``. The names the
naming convention derives from a table's (keys, constraints, indexes, and
PostgreSQL's sequences) follow, so that later migrations find them by the
convention. ``submissions`` keeps its name: SQLite's search index names it as
its content table, and renaming it means rebuilding that index.

PostgreSQL renames everything in place. SQLite renames the table in place
but has no way to rename a constraint or an index: each of these tables is
then rebuilt under its new names (Alembic's batch mode: a copy, in the same
transaction). They are small next to ``submissions``; the largest, the outbox,
holds two rows per inquiry until the cleanup removes them.
"""

from alembic import op
import sqlalchemy as sa


revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

TABLES = {
    'prune_runs': 'cleanup_runs',
    'verification': 'one_time_secrets',
    'session': 'admin_logins',
    'audit_log': 'audit_entries',
    'outbox': 'deliveries',
}
# Per table, named for its old name: (kind, name, columns, referred table, on delete).
CONSTRAINTS = {
    'prune_runs': [('primary', 'pk_prune_runs', ['id'], None, None)],
    'verification': [('primary', 'pk_verification', ['id'], None, None),
                     ('unique', 'uq_verification_identifier', ['identifier'], None, None)],
    'session': [('primary', 'pk_session', ['id'], None, None),
                ('unique', 'uq_session_token_hash', ['token_hash'], None, None),
                ('foreignkey', 'fk_session_admin_id_admins', ['admin_id'], 'admins', 'CASCADE'),
                ('foreignkey', 'fk_session_passkey_id_passkeys', ['passkey_id'], 'passkeys', 'SET NULL')],
    'audit_log': [('primary', 'pk_audit_log', ['id'], None, None)],
    'outbox': [('primary', 'pk_outbox', ['id'], None, None),
               ('foreignkey', 'fk_outbox_inquiry_id_submissions', ['inquiry_id'], 'submissions', 'CASCADE')],
}
SET = "finished_at IS NOT NULL"
# Per table: (name, columns, partial-index condition).
INDEXES = {
    'prune_runs': [('ix_prune_runs_started_at', ['started_at'], None)],
    'verification': [('ix_verification_expires_at', ['expires_at'], None)],
    'session': [('ix_session_admin_id', ['admin_id'], None), ('ix_session_expires_at', ['expires_at'], None),
                ('ix_session_passkey_id', ['passkey_id'], None)],
    'audit_log': [('ix_audit_log_created_at', ['created_at'], None)],
    'outbox': [('ix_outbox_status_next_attempt_at', ['status', 'next_attempt_at'], None),
               ('ix_outbox_inquiry_id', ['inquiry_id'], None), ('ix_outbox_finished_at', ['finished_at'], SET)],
}


def upgrade() -> None:
    for old, new in TABLES.items():
        _rename(old, old, new)


def downgrade() -> None:
    for old, new in TABLES.items():
        _rename(old, new, old)


def _renamed(name: str, before: str, after: str) -> str:
    """``name`` by the naming convention (``pk_``, ``uq_``, ``fk_``, ``ix_`` and the table) for table ``after``."""
    prefix, rest = name.split('_', 1)
    assert rest.startswith(before), name
    return f"{prefix}_{after}{rest[len(before):]}"


def _rename(key: str, before: str, after: str) -> None:
    """Rename table ``before`` to ``after`` with what is named after it; ``key`` names it in the lists above."""
    op.rename_table(before, after)
    constraints = [(kind, _renamed(name, key, before), _renamed(name, key, after), columns, referred, ondelete)
                   for kind, name, columns, referred, ondelete in CONSTRAINTS[key]]
    indexes = [(_renamed(name, key, before), _renamed(name, key, after), columns, where)
               for name, columns, where in INDEXES[key]]
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(f'ALTER SEQUENCE {before}_id_seq RENAME TO {after}_id_seq')
        for _kind, old_name, new_name, *_rest in constraints:
            op.execute(f'ALTER TABLE {after} RENAME CONSTRAINT {old_name} TO {new_name}')
        for old_name, new_name, _columns, _where in indexes:
            op.execute(f'ALTER INDEX {old_name} RENAME TO {new_name}')
        return
    with op.batch_alter_table(after, recreate='always') as batch:
        for kind, old_name, new_name, columns, referred, ondelete in constraints:
            batch.drop_constraint(old_name, type_=kind)
            if kind == 'primary':
                batch.create_primary_key(new_name, columns)
            elif kind == 'unique':
                batch.create_unique_constraint(new_name, columns)
            else:
                batch.create_foreign_key(new_name, referred, columns, ['id'], ondelete=ondelete)
        for old_name, new_name, columns, where in indexes:
            batch.drop_index(old_name)
            batch.create_index(new_name, columns, sqlite_where=sa.text(where) if where else None)
