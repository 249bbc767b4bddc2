"""For scrapyd-deploy, which builds the project's egg with ``setup.py bdist_egg``; everything else
(name, packages, the ``scrapy`` settings entry point) comes from pyproject.toml."""

from setuptools import setup

setup()
