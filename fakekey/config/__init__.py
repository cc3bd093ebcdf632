"""Settings, their validation and limits, and the config-file reader."""
