"""Agent Lightning's PyTorch policy engine (see engines/torch/README.md)."""

__version__ = '0.1.0'
