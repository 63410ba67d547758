"""Layer 1: the model, diagnostics, the field vocabulary, limits and the helpers every format
shares. Imports nothing else of dcx."""
