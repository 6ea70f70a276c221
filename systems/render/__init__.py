"""Rendering: where cloth is drawn — ``gl`` (moderngl), ``soft`` (onto a pygame Surface), ``surface``
(normals, subdivision, strain colours both draw from), ``window`` (the interactive loop)."""
__all__: list[str] = []
