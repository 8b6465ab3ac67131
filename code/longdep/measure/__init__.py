"""Numbers about any model: gradients over distance, path lengths (reach), and cost."""
