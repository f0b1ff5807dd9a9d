def measure_stadium(stack, seats):
    return None
