"""The generated blocks of README.md and the docs pages, one module per family
(:mod:`scripts/update_readme.py` fills them): each ``block_<name>()`` returns the body of the block
``<name>`` rendered from the results files."""
