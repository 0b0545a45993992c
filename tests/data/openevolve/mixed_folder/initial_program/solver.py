"""Entry of the program: picks item values under a capacity (a toy knapsack)."""
import json
import os

from lib.weights import weight


# EVOLVE-BLOCK-START
def choose(items, capacity):
    chosen, used = [], 0
    for item in items:
        if used + weight(item) <= capacity:
            chosen.append(item)
            used += weight(item)
    return chosen
# EVOLVE-BLOCK-END


def run(folder):
    with open(os.path.join(folder, "params.json"), encoding="utf-8") as fh:
        params = json.load(fh)
    return choose(params["items"], params["capacity"])
