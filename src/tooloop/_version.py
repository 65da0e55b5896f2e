"""The package version, in a leaf module so adapters can name it in their User-Agent."""

__version__ = "0.1.0"
