"""Layer 4: conversion through the model, the loss matrix, the pipeline, the CLI and the hook,
all derived from the format declarations (``dcx.converters.registry``)."""
