"""The SC18 reference-architecture scheduler (stages, policies, time models, metrics)."""
