"""Scheduler declarations shipped with dcx: one JSON file per scheduler, each a policy per
stage of the SC18 reference architecture (``schemas/scheduler.schema.json``)."""
