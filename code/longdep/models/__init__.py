"""The sequence models, each equal to its PyTorch twin where it has one (Chapters 1–6).

A model file imports only torch and its siblings here (most need only :mod:`._checks`), so
it can be copied into another project alone."""
