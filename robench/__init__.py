"""robench: measure how robust a trained PyTorch model is."""

__version__ = "0.1.0"
