"""Certified robustness: randomized smoothing (Cohen, Rosenfeld and Kolter, ICML 2019).
`params.py` registers the `randomized-smoothing` and `smoothed-pgd` kinds (validated without
torch), `smoothing.py` runs CERTIFY, `smoothed_pgd.py` SmoothAdv's PGD-L2 on the smoothed
classifier and PREDICT at its image; the statistics (Clopper-Pearson bound, radius, PREDICT's
binomial test) are in `robench/results/stats/certificates.py`."""
