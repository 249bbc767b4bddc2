"""The near-duplicate fingerprint's C pass (tarantula/core/_simhash.c) and the hash sets' binary
search (tarantula/core/_hashset.c), built where a compiler is found and left out where not (they
then run in Python, with the same result); and for scrapyd-deploy, which builds the project's egg
with ``setup.py bdist_egg``. Everything else (name, packages, the ``scrapy`` settings entry point)
comes from pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tarantula.core._simhash",
            sources=["tarantula/core/_simhash.c"],
            include_dirs=["tarantula/core/_xxhash"],
            depends=["tarantula/core/_xxhash/xxhash.h"],
            optional=True,
        ),
        Extension("tarantula.core._hashset", sources=["tarantula/core/_hashset.c"], optional=True),
        Extension("tarantula.core._reader", sources=["tarantula/core/_reader.c"], optional=True),
    ]
)
