def weight(item):
    return item
