"""pytest setup for trnsim's Python tests. ctest puts build/python (the C++ module) and python/
(the package) on PYTHONPATH and names the trnsim binary in TRNSIM_BINARY; run by hand, these
defaults find them in ./build."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("TRNSIM_BUILD_DIR", os.path.join(ROOT, "build"))
for p in (os.path.join(ROOT, "python"), os.path.join(BUILD, "python"), HERE):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("TRNSIM_BINARY", os.path.join(BUILD, "trnsim"))
