"""The chapters' experiment drivers, one module per topic. Each returns plain data (numbers,
tensors, dicts of them) for a chapter to print, glue and hand to :mod:`longdep.plots`.
"""
