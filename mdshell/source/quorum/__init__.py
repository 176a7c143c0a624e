"""Live mode (``-q``): a KRaft observer client that reads ``__cluster_metadata`` from controllers.

Independent of the loader: it yields snapshot bytes, fetched batch bytes with offsets and epochs,
and what the quorum says about itself. ``mdshell/source/live.py`` lays it out as a source.
"""
