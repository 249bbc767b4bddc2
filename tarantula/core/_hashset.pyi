# The binary search of tarantula/core/frontier.py's HashSet (_hashset.c).
from array import array

def in_sorted(values: array[int], value: int, /) -> bool: ...
