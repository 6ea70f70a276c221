"""Loom's files: what a simulation writes to disk and reads back. May import anything in loom.

- ``loom.files.meshes``: reads OBJ (positions, faces, UVs) into a Mesh; writes OBJ and PLY, and numbered frames.
- ``loom.files.bake``: writes a game's animation, stepped headless, as OBJ/PLY frames (``python -m``, resumable).
- ``loom.files.thickness``: writes a closed mesh at distance T around a cloth (``python -m``, from a baked frame).
- ``loom.files.snapshot``: writes an App's whole simulation state to a file and reads it back bit-identically.
- ``loom.files.replay``: writes the inputs of each fixed step to a log and plays them back into a fresh App.

Import the module you need; importing ``loom.files`` itself loads none of them.
"""
