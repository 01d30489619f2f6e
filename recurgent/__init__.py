"""recurgent: an embedded agent runtime."""
