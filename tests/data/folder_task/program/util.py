def bonus():
    return 1
