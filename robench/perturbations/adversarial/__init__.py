"""Adversarial attacks through their libraries (torchattacks, pyautoattack), in pixel units."""
