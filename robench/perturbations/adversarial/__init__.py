"""Adversarial attacks through their libraries (torchattacks, pyautoattack), in pixel units,
and robench's own where no library has one (FGM, dense PGD, FMN for the minimal-norm kind)."""
