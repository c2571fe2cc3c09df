"""One module per verb. Each exposes ``register(subparsers)``; the parser it adds sets ``func``,
a callable taking the parsed ``argparse.Namespace`` and returning an exit code."""
