"""The version, in one place (setup.py reads it from this file)."""
__version__ = "0.2.0"
