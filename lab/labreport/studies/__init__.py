"""One module per experiment, each with the section that reports it."""
