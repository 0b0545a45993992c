"""What the fixture's evaluator compares with."""

TARGET = 2 ** 0.5
