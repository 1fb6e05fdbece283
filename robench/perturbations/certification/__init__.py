"""Certified robustness: randomized smoothing (Cohen, Rosenfeld and Kolter, ICML 2019).
`params.py` registers the `randomized-smoothing` kind (validated without torch),
`smoothing.py` runs CERTIFY; the statistics (Clopper-Pearson bound, radius) are in
`robench/results/stats/certificates.py`."""
