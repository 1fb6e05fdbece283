"""Attention layers that drop into timm models."""

from robench.layers.elliptical_attention import EllipticalAttention as EllipticalAttention
from robench.layers.elliptical_attention import configure_elliptical as configure_elliptical
from robench.layers.elliptical_attention import consistent_weights as consistent_weights
from robench.layers.elliptical_attention import elliptical_weights as elliptical_weights
from robench.layers.elliptical_attention import is_elliptical as is_elliptical
from robench.layers.elliptical_attention import set_differentiable as set_differentiable
