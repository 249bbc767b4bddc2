"""The near-duplicate fingerprint's C pass (tarantula/core/_simhash.c), built where a compiler is
found and left out where not (the fingerprint then runs in Python, with the same result); and for
scrapyd-deploy, which builds the project's egg with ``setup.py bdist_egg``. Everything else (name,
packages, the ``scrapy`` settings entry point) comes from pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tarantula.core._simhash",
            sources=["tarantula/core/_simhash.c"],
            include_dirs=["tarantula/core/_xxhash"],
            depends=["tarantula/core/_xxhash/xxhash.h"],
            optional=True,
        )
    ]
)
