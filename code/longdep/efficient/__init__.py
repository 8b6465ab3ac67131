"""Beyond quadratic attention (Chapter 6): sparse masks, linear attention, Performer, Linformer,
a selective state-space layer, and the instruments that measure their cost.

- :mod:`longdep.efficient.sparse`: sliding-window, global-token and BigBird masks; banded
  sliding-window attention in O(time * window);
- :mod:`longdep.efficient.linear`: linear attention (parallel and recurrent), Performer, Linformer;
- :mod:`longdep.efficient.ssm`: sequential and parallel scans, the selective SSM layer;
- :mod:`longdep.efficient.mixers`: these mixers inside the book's Transformer layer;
- :mod:`longdep.efficient.cost`: time, peak memory, FLOPs, sequential depth, fitted exponents.
"""
