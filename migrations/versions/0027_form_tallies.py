"""form tallies: the inquiries removed, counted per form, for the retention report

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07

``form_tallies`` (``app.inquiries.tally``): per form, how many inquiries the
cleanup deleted (a row per run, form and target, which each batch adds to)
or anonymised, and how many admins deleted and erasures erased (a row per
form and action). The ledger counts per target for the whole site and the
audit log without forms, so what was removed before this revision is not
counted per form: nothing here is filled from them. Downgrading drops the
counts.
"""

from alembic import op
import sqlalchemy as sa


revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'form_tallies',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('form_id', sa.Integer(), nullable=False),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('count', sa.Integer(), nullable=False),
        sa.Column('at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('run_id', sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_form_tallies')),
    )
    op.create_index('ix_form_tallies_at', 'form_tallies', ['at'])
    op.create_index('ix_form_tallies_form_id_at', 'form_tallies', ['form_id', 'at'])
    op.create_index('ux_form_tallies_run_id_form_id_kind', 'form_tallies', ['run_id', 'form_id', 'kind'], unique=True)


def downgrade() -> None:
    op.drop_table('form_tallies')
