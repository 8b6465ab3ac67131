"""The book's figures: one style (:mod:`longdep.plots.style`) and one module of figures per topic.
Every function takes arrays and plain data, never a model or a training loop.
"""
