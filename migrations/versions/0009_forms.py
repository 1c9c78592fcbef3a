"""forms: several forms, each with its own fields and retention; the existing one becomes "Contact"

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04

Every stored inquiry is attached to the first form, "Contact" (slug
``contact``, id 1, the same three fields), which ``/`` and
``POST /api/inquiries`` keep serving. ``submissions.form_id`` is added in
place, nullable and without a foreign key: SQLite adds a NOT NULL column
only with a constant default, can drop a column only if no constraint names
it, and rebuilding ``submissions`` (its search index's content, and the
parent of ``deliveries``, whose rows would cascade) is not safe in a
migration. The app always sets it, and deletes a form only once no inquiry
names it. The inquiries stored before keep ``answers``
NULL: their answers are the name, e-mail and message columns.
"""

from alembic import op
import sqlalchemy as sa


revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

CONTACT_FIELDS = [
    {"key": "name", "type": "text", "label": {"en": "Your name"}, "required": True, "max": 100},
    {"key": "email", "type": "email", "label": {"en": "Email address"}, "required": True},
    {"key": "message", "type": "textarea", "label": {"en": "Message"}, "required": True, "max": 5000},
]


def upgrade() -> None:
    forms = op.create_table(
        'forms',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('slug', sa.String(length=60), nullable=False),
        sa.Column('title', sa.JSON(), nullable=False),
        sa.Column('description', sa.JSON(), nullable=False),
        sa.Column('fields', sa.JSON(), nullable=False),
        sa.Column('email_field', sa.String(length=40), nullable=True),
        sa.Column('enabled', sa.Boolean(), server_default='1', nullable=False),
        sa.Column('retention_days', sa.Integer(), nullable=True),
        sa.Column('spam_retention_days', sa.Integer(), nullable=True),
        sa.Column('notify_emails', sa.JSON(), nullable=True),
        sa.Column('webhook_url', sa.String(length=500), nullable=True),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_forms')),
        sa.UniqueConstraint('slug', name=op.f('uq_forms_slug')),
    )
    now = sa.func.now()
    op.execute(forms.insert().values(
        id=1, slug='contact', title={"en": "Contact"},
        description={"en": "We read every message and answer by email."}, fields=CONTACT_FIELDS,
        email_field='email', enabled=True, created_at=now, updated_at=now,
    ))
    if op.get_bind().dialect.name == 'postgresql':
        op.execute("SELECT setval('forms_id_seq', 1)")
    op.add_column('submissions', sa.Column('form_id', sa.Integer(), nullable=True))
    op.add_column('submissions', sa.Column('answers', sa.JSON(), nullable=True))
    op.execute('UPDATE submissions SET form_id = 1')
    op.create_index('ix_submissions_status_form_id_created_at_id', 'submissions',
                    ['status', 'form_id', 'created_at', 'id'])
    op.add_column('cleanup_runs', sa.Column('form_retention_days', sa.JSON(), nullable=True))


def downgrade() -> None:
    """Back to one form: every inquiry stays, with its name, e-mail and message; other answers are lost."""
    op.drop_column('cleanup_runs', 'form_retention_days')
    op.drop_index('ix_submissions_status_form_id_created_at_id', table_name='submissions')
    op.drop_column('submissions', 'answers')
    op.drop_column('submissions', 'form_id')
    op.drop_table('forms')
