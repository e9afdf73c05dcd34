import os
import sys

# The oracles beside the tests.
sys.path.insert(0, os.path.dirname(__file__))
