"""The package version, in a leaf module: the adapter names it in its user agent without importing
the package face (which re-exports the service)."""

__version__ = "0.1.0"
