"""Attention layers that drop into timm models."""

from robench.models.layers.elliptical_attention import EllipticalAttention as EllipticalAttention
from robench.models.layers.elliptical_attention import configure_elliptical as configure_elliptical
from robench.models.layers.elliptical_attention import consistent_weights as consistent_weights
from robench.models.layers.elliptical_attention import elliptical_weights as elliptical_weights
from robench.models.layers.elliptical_attention import is_elliptical as is_elliptical
from robench.models.layers.elliptical_attention import set_differentiable as set_differentiable
