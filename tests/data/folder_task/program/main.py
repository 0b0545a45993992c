import json
import os

from util import bonus


# EVOLVE-BLOCK-START
def solve():
    with open(os.path.join(os.path.dirname(__file__), "table.json"), encoding="utf-8") as fh:
        table = json.load(fh)
    return sum(table["values"]) + bonus()
# EVOLVE-BLOCK-END
