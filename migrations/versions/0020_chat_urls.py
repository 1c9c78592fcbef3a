"""chat URLs per form

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07

* ``forms.notify_urls``: the form's own chat URLs (Apprise-style, for the
  six services of ``app.core.chaturls``), as a JSON list, sent to in
  addition to the site's; NULL: the site's alone. The site's own list is a
  row of ``preferences`` (``notify_urls``), like its e-mail recipients.
"""

from alembic import op
import sqlalchemy as sa


revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("forms", sa.Column("notify_urls", sa.JSON(none_as_null=True), nullable=True))


def downgrade() -> None:
    op.drop_column("forms", "notify_urls")
