"""The ``ferry`` command line: thin wrappers over the library, errors mapped to exit codes here."""
