"""The core: settings parsers, database, clock, logs, metrics, the background runner, i18n."""
