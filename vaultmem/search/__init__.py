"""Recall: the BM25 index, the embedding model and its vector cache, the engine that
keeps them in step with the files, and the fusion of their scores."""
