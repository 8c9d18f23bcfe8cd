"""The package's jobs: ``validate`` (the cross-target matrix), ``bundle`` (deployment bundles), ``bench``.

Each job is a small package of its own, split by concern; the CLI parses arguments and calls them, and no
job imports the CLI.
"""
