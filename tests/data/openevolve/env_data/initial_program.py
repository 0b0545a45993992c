"""A task directory whose evaluator reads variables and a data folder (issue 31, item 6)."""

# EVOLVE-BLOCK-START
def weights():
    return [0.0, 0.0, 0.0]
# EVOLVE-BLOCK-END
