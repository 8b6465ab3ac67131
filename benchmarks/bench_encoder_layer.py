"""Time longdep's EncoderLayer against torch.nn.TransformerEncoderLayer (Chapter 5's layers).

Both layers hold the same weights and run forward plus backward on the same input: batch 16,
length 128, d_model 256, 8 heads, d_ff 1024, two threads, training mode with dropout 0. The
two are timed pair by pair, interleaved, so that a change in the machine's load hits both; the
script prints the median of the per-pair ratios (goal: at most 1.3).

    .venv/bin/python benchmarks/bench_encoder_layer.py [--pairs 30] [--norm-first]
"""

import argparse
import statistics
import time

import torch
from longdep.models.transformer import EncoderLayer
from torch import nn

BATCH, LENGTH, D_MODEL, HEADS, D_FF, THREADS = 16, 128, 256, 8, 1024, 2


def forward_backward_seconds(layer: nn.Module, x: torch.Tensor) -> float:
    """Wall-clock seconds of one forward and backward pass of ``layer`` on ``x``."""
    start = time.perf_counter()
    layer(x).sum().backward()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=30, help="timed pairs (default 30)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed pairs first (default 3)")
    parser.add_argument("--norm-first", action="store_true", help="Pre-LN instead of Post-LN")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(THREADS)
    reference = nn.TransformerEncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, batch_first=True,
                                           norm_first=args.norm_first)
    ours = EncoderLayer.from_torch(reference)
    x = torch.randn(BATCH, LENGTH, D_MODEL, requires_grad=True)

    ratios = []
    for pair in range(args.warmup + args.pairs):
        ours_seconds = forward_backward_seconds(ours, x)
        torch_seconds = forward_backward_seconds(reference, x)
        if pair >= args.warmup:
            ratios.append(ours_seconds / torch_seconds)
    quartiles = statistics.quantiles(ratios, n=4)
    print(f"EncoderLayer / torch.nn.TransformerEncoderLayer, forward + backward, "
          f"{'Pre' if args.norm_first else 'Post'}-LN, batch {BATCH}, length {LENGTH}, "
          f"d_model {D_MODEL}, {HEADS} heads, d_ff {D_FF}, {THREADS} threads, {args.pairs} pairs")
    print(f"median time ratio {statistics.median(ratios):.3f} "
          f"(quartiles {quartiles[0]:.3f} .. {quartiles[2]:.3f}; goal <= 1.3)")


if __name__ == "__main__":
    main()
