"""Secure parsing, structural validation, conversion through the model, the CLI and the hook."""
