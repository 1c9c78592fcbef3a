#!/bin/sh
# The container's entrypoint: migrate when asked (one replica only), print the first admin's link, then
# run the command (by default `sundown serve`) as PID 1's replacement.
set -eu
SUNDOWN="${SUNDOWN_COMMAND:-sundown}"

if [ "${SUNDOWN_MIGRATE_ON_START:-0}" = "1" ]; then
  # Single replica only: several replicas starting together would race to migrate.
  echo "Migrating the database (SUNDOWN_MIGRATE_ON_START=1)..." >&2
  $SUNDOWN migrate
fi
# Prints the enrollment link while no admin exists yet, nothing afterwards; a database not yet
# migrated is not an error here (the health check reports it).
$SUNDOWN admin first-link >&2 || true

exec "$@"
