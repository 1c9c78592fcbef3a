"""site intake: why an inquiry is in spam, what admins taught the spam score, sites refused

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-08

* ``submissions.spam_checks``: the checks that put an inquiry in the spam
  folder (``app.inquiries.spam``), as a JSON list; NULL in the inbox and
  for spam from before.
* ``spam_tokens``: the learned score's counts (``app.inquiries.learned``):
  per keyed hash of a word, link domain or sender, how often admins moved
  an inquiry holding it to spam or out of it. No text is stored.
* ``refused_sites``: posts to a form from a site it does not list, per form
  and origin, so the form's page can offer to allow the site
  (``app.forms.refused``).
"""

from alembic import op
import sqlalchemy as sa


revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('submissions', sa.Column('spam_checks', sa.JSON(none_as_null=True), nullable=True))
    op.create_table(
        'spam_tokens',
        sa.Column('token', sa.String(length=32), nullable=False),
        sa.Column('spam', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('ham', sa.Integer(), nullable=False, server_default='0'),
        sa.PrimaryKeyConstraint('token', name=op.f('pk_spam_tokens')),
    )
    op.create_table(
        'refused_sites',
        sa.Column('form_id', sa.Integer(), nullable=False),
        sa.Column('origin', sa.String(length=200), nullable=False),
        sa.Column('count', sa.Integer(), nullable=False, server_default='0'),
        sa.Column('last_at', sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('form_id', 'origin', name=op.f('pk_refused_sites')),
    )


def downgrade() -> None:
    op.drop_table('refused_sites')
    op.drop_table('spam_tokens')
    op.drop_column('submissions', 'spam_checks')
