"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02
"""

from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('admins',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('user_handle', sa.LargeBinary(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_admins')),
    sa.UniqueConstraint('name', name=op.f('uq_admins_name')),
    sa.UniqueConstraint('user_handle', name=op.f('uq_admins_user_handle'))
    )
    op.create_table('audit_log',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('admin_name', sa.String(length=100), nullable=False),
    sa.Column('action', sa.String(length=40), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('detail', sa.String(length=300), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_audit_log'))
    )
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_log_created_at'), ['created_at'], unique=False)

    op.create_table('prune_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('trigger', sa.String(length=40), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('cutoff', sa.DateTime(timezone=True), nullable=False),
    sa.Column('retention_days', sa.Integer(), nullable=False),
    sa.Column('deleted', sa.Text(), nullable=False),
    sa.Column('remaining', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sa.String(length=500), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_prune_runs'))
    )
    with op.batch_alter_table('prune_runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_prune_runs_started_at'), ['started_at'], unique=False)

    op.create_table('rate_limits',
    sa.Column('key', sa.String(length=200), nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_rate_limits'))
    )
    with op.batch_alter_table('rate_limits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rate_limits_expires_at'), ['expires_at'], unique=False)

    op.create_table('settings',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_settings'))
    )
    op.create_table('submissions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('message', sa.Text(), nullable=False),
    sa.Column('user_agent', sa.String(length=300), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('legal_hold', sa.Boolean(), server_default='0', nullable=False),
    sa.Column('hold_reason', sa.String(length=200), nullable=True),
    sa.Column('hold_by', sa.String(length=100), nullable=True),
    sa.Column('held_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_submissions'))
    )
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.create_index('ix_submissions_created_at_id', ['created_at', 'id'], unique=False)

    op.create_table('verification',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('identifier', sa.String(length=128), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_verification')),
    sa.UniqueConstraint('identifier', name=op.f('uq_verification_identifier'))
    )
    with op.batch_alter_table('verification', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_verification_expires_at'), ['expires_at'], unique=False)

    op.create_table('passkeys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('admin_id', sa.Integer(), nullable=False),
    sa.Column('credential_id', sa.LargeBinary(length=1023), nullable=False),
    sa.Column('public_key', sa.LargeBinary(), nullable=False),
    sa.Column('sign_count', sa.Integer(), nullable=False),
    sa.Column('transports', sa.String(length=200), nullable=False),
    sa.Column('aaguid', sa.String(length=36), nullable=False),
    sa.Column('backed_up', sa.Boolean(), nullable=False),
    sa.Column('device_type', sa.String(length=32), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['admin_id'], ['admins.id'], name=op.f('fk_passkeys_admin_id_admins'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_passkeys')),
    sa.UniqueConstraint('credential_id', name=op.f('uq_passkeys_credential_id'))
    )
    with op.batch_alter_table('passkeys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_passkeys_admin_id'), ['admin_id'], unique=False)

    op.create_table('session',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('admin_id', sa.Integer(), nullable=False),
    sa.Column('passkey_id', sa.Integer(), nullable=True),
    sa.Column('browser', sa.String(length=100), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['admin_id'], ['admins.id'], name=op.f('fk_session_admin_id_admins'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['passkey_id'], ['passkeys.id'], name=op.f('fk_session_passkey_id_passkeys'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_session')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_session_token_hash'))
    )
    with op.batch_alter_table('session', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_session_admin_id'), ['admin_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_session_expires_at'), ['expires_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_session_passkey_id'), ['passkey_id'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('session', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_session_passkey_id'))
        batch_op.drop_index(batch_op.f('ix_session_expires_at'))
        batch_op.drop_index(batch_op.f('ix_session_admin_id'))

    op.drop_table('session')
    with op.batch_alter_table('passkeys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_passkeys_admin_id'))

    op.drop_table('passkeys')
    with op.batch_alter_table('verification', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_verification_expires_at'))

    op.drop_table('verification')
    with op.batch_alter_table('submissions', schema=None) as batch_op:
        batch_op.drop_index('ix_submissions_created_at_id')

    op.drop_table('submissions')
    op.drop_table('settings')
    with op.batch_alter_table('rate_limits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rate_limits_expires_at'))

    op.drop_table('rate_limits')
    with op.batch_alter_table('prune_runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_prune_runs_started_at'))

    op.drop_table('prune_runs')
    with op.batch_alter_table('audit_log', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_log_created_at'))

    op.drop_table('audit_log')
    op.drop_table('admins')

