"""Find the lowest point of a bumpy function on an interval (OpenEvolve layout).

basevolve example (examples/openevolve_dir): the evaluator calls search(f, lo, hi) on
several functions and scores how close f(x) gets to the true minimum, using at most
200 calls of f per function.
"""


# EVOLVE-BLOCK-START
def search(f, lo, hi):
    """Return x in [lo, hi] with f(x) as small as possible; call f at most 200 times."""
    best_x, best_y = lo, f(lo)
    steps = 40
    for i in range(1, steps + 1):
        x = lo + (hi - lo) * i / steps
        y = f(x)
        if y < best_y:
            best_x, best_y = x, y
    return best_x
# EVOLVE-BLOCK-END
