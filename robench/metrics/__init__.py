"""Metrics computed from per-sample results; each is registered with its direction."""

from robench.metrics.accuracy import METRICS as METRICS
from robench.metrics.accuracy import MetricSpec as MetricSpec
from robench.metrics.accuracy import wilson_interval as wilson_interval
