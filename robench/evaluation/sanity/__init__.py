"""The sanity battery: checks against gradient masking and other ways a robustness number can
lie (`checks`), what each check costs and the budget that bounds it (`budget`), and the battery
as a step of `evaluate` (`battery`). docs/sanity.md describes the checks and the budgets.
"""
