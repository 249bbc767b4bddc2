"""What a repository folder keeps of its own, whatever keeps the crawl (one process's SQLite
store, or Redis): a SQLite database with hooks around its commits (:mod:`.database`), and the
browsable copy kept in line with the folder's documents (:mod:`.browse`). Both backends use it;
it imports neither."""

from __future__ import annotations

from tarantula.store.folder.browse import BrowseMirror, DocumentList, FolderBrowse, FolderDocuments

__all__ = ["BrowseMirror", "DocumentList", "FolderBrowse", "FolderDocuments"]
