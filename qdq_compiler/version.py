"""The package's version, in a leaf module: code inside the package reads it from here, never from the
package root (importing the root from inside would run back up the import graph)."""
__version__ = "0.1.0"
