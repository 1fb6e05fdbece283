"""Perturbations of text: Word Swap on a language-modelling corpus (`params`, `swaps`,
`perturbation`) and TextAttack's recipes on text classifiers (`attack_params`, `recipes`,
`word_attack`), each registered by its schema without torch.
"""
