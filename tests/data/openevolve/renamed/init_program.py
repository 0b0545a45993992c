"""Approximate the square root of two (a basevolve test fixture, issue 31).

Named init_program.py, not initial_program.py, as some OpenEvolve examples name theirs.
"""


# EVOLVE-BLOCK-START
def estimate():
    """Return a number as close to the square root of two as you can."""
    return 1.0
# EVOLVE-BLOCK-END
